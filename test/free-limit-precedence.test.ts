import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/*
 * Spec, Errors / 429, rule 1: "Origin A: the service itself, on a platform limit (free-model requests per
 * minute, per day, or DDoS protection). The response carries X-RateLimit-Limit, X-RateLimit-Remaining and
 * X-RateLimit-Reset, describing the limit hit."
 * Spec, rule 6: "retry with exponential backoff, honoring Retry-After when present".
 * CONTRACT §6: "429 from the platform's own limits: ... `metadata.limit` names it".
 *
 * When the account's daily free-model ceiling is reached, every free-model request today is over the
 * daily limit. If the per-minute counter of that model is full too, the refusal describes the daily
 * limit, the one that blocks longest (src/admission/free-limits.ts, blocking()): a client honouring a
 * Retry-After of the minute's would be refused again, by the daily limit, until 00:00 UTC.
 */
describe('a request over both the per-minute and the daily free-model limit', () => {
  const MINUTE = 60_000;
  const clock = new ManualClock(Date.UTC(2026, 10, 25, 9, 0, 10));
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway(
      {
        limits: { free_models: { suffix: ':free', per_minute: 3, per_day_low: 5, per_day_high: 8, tier_threshold: 10, free_tier_threshold: 10 } },
      },
      clock,
    );
  });
  afterAll(() => gw.close());

  const ask = (key: string) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo:free', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] } });

  it('is answered with the daily limit (reset at the next 00:00 UTC), since waiting out the minute does not help', async () => {
    const a = await gw.account(0); // low tier: 5 a day
    for (let i = 0; i < 2; i++) expect((await ask(a.key)).status).toBe(200);
    clock.set((Math.floor(clock.now() / MINUTE) + 1) * MINUTE + 10);
    for (let i = 0; i < 3; i++) expect((await ask(a.key)).status).toBe(200); // day: 5 of 5; this minute: 3 of 3
    const status = ((await (await gw.fetch('/api/v1/key', { token: a.key })).json()) as { data: Record<string, any> }).data;
    expect(status.free_model_daily_requests).toEqual({ used: 5, limit: 5, remaining: 0 });

    const refused = await ask(a.key);
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { metadata: Record<string, unknown> } };
    expect({
      limit: body.error.metadata.limit,
      'x-ratelimit-limit': refused.headers.get('x-ratelimit-limit'),
      'x-ratelimit-reset': refused.headers.get('x-ratelimit-reset'),
    }).toEqual({
      limit: 'free-models-per-day',
      'x-ratelimit-limit': '5',
      'x-ratelimit-reset': String(Date.UTC(2026, 10, 26)),
    });

    // Honouring the Retry-After it was given, the client is refused again.
    clock.advance(Number(refused.headers.get('retry-after') ?? 0) * 1000);
    expect((await ask(a.key)).status).toBe(429);
  });
});
