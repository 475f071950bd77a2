import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §6: "429 from upstream providers (after fallback is exhausted): metadata.provider_name,
 * metadata.provider_code when the provider gave one; Retry-After (seconds, the smallest hint) only
 * when every attempted provider gave a retry hint." Spec, 429 rule 6: clients honour Retry-After.
 * The cooldown that keeps the gateway from asking a provider again is capped (routing.max_cooldown_ms,
 * 60 s by default), but the hint the client is given is the one the providers gave.
 */
describe('CONTRACT §6: an upstream 429 carries the smallest retry hint the providers gave', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9));
  const a = new ScriptedUpstream();
  const b = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [ua, ub] = await Promise.all([a.start(), b.start()]);
    const limited = (seconds: number) => ({
      kind: 'json' as const,
      status: 429,
      headers: { 'retry-after': String(seconds) },
      body: { error: { code: 'rate_limit_exceeded', message: 'slow down' } },
    });
    a.script(limited(120));
    b.script(limited(300));
    gw = await startTestGateway(
      {
        providers: [
          { id: 'alpha', type: 'openai', base_url: ua },
          { id: 'beta', type: 'openai', base_url: ub },
        ],
        models: [
          {
            id: 'm/one',
            endpoints: [
              { provider: 'alpha', model: 'one', pricing: { prompt: '0.000001', completion: '0.000002' } },
              { provider: 'beta', model: 'one', pricing: { prompt: '0.000001', completion: '0.000002' } },
            ],
          },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([a.stop(), b.stop()]);
  });

  it('hints of 120 s and 300 s: Retry-After is 120', async () => {
    const acct = await gw.account(10);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'm/one', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.status).toBe(429);
    const body = (await res.json()) as { error: { metadata: Record<string, unknown> } };
    expect(body.error.metadata.provider_code).toBe('rate_limit_exceeded');
    expect(a.received).toHaveLength(1);
    expect(b.received).toHaveLength(1);
    expect(res.headers.get('retry-after')).toBe('120');

    // 30 s on, both are cooling down: neither is asked, and the hint left is 90 s.
    clock.advance(30_000);
    const skipped = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'm/one', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(skipped.status).toBe(429);
    expect(skipped.headers.get('retry-after')).toBe('90');
    expect(a.received).toHaveLength(1);
    expect(b.received).toHaveLength(1);

    // Past the 60 s cap the gateway asks again, whatever the hints were.
    clock.advance(30_001);
    a.script({ kind: 'json', status: 429, headers: { 'retry-after': '5' }, body: { error: { code: 'rate_limit_exceeded', message: 'slow down' } } });
    b.script({ kind: 'json', status: 429, headers: { 'retry-after': '7' }, body: { error: { code: 'rate_limit_exceeded', message: 'slow down' } } });
    const again = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 'm/one', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(again.status).toBe(429);
    expect(a.received).toHaveLength(2);
    expect(b.received).toHaveLength(2);
    // What they answer now is the hint: the smallest, alpha's 5 s.
    expect(again.headers.get('retry-after')).toBe('5');
  });
});
