import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

const MINUTE = 60_000;
const free = (id: string, extra: Record<string, unknown> = {}, endpoint: Record<string, unknown> = {}) => ({
  id,
  ...extra,
  endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' }, ...endpoint }],
});

interface Err {
  error: { code: number; message: string; metadata: Record<string, any> };
}

describe('free-model rate limits (spec: Limits / Rate limits, Errors / 429 origin A)', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 10));
  const broken = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const brokenUrl = await broken.start();
    broken.script({ kind: 'json', status: 500, body: { error: { message: 'down' } } });
    gw = await startTestGateway(
      {
        limits: { free_models: { suffix: ':free', per_minute: 3, per_day_low: 5, per_day_high: 8, tier_threshold: 10, free_tier_threshold: 10 } },
        providers: [
          { id: 'demo', type: 'demo', token_latency_ms: 0 },
          { id: 'broken', type: 'openai', base_url: brokenUrl },
        ],
        models: [
          free('f/a:free'),
          free('f/b:free'),
          free('f/two:free', { per_minute: 2 }),
          free('f/cap:free', { capacity_per_minute: 3 }),
          free('f/exempt:free', {}, { free_limits_exempt: true }),
          { id: 'f/broken:free', endpoints: [{ provider: 'broken', model: 'x', pricing: { prompt: '0', completion: '0' } }] },
          { id: 'f/a', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await broken.stop();
  });

  const ask = (key: string, model: string) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model, max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] } });
  const status = async (key: string) => ((await (await gw.fetch('/api/v1/key', { token: key })).json()) as { data: Record<string, any> }).data;
  const account = async (purchased = 0, body: Record<string, unknown> = {}) => {
    const a = await gw.admin.createAccount({ name: 'free', ...body });
    if (purchased > 0) await gw.admin.addCredits(a.id, { amount: purchased });
    const { key } = await gw.admin.createKey(a.id, {});
    return { id: a.id, key };
  };
  const expect429 = async (res: Response, limit: string) => {
    expect(res.status).toBe(429);
    const body = (await res.json()) as Err;
    expect(body.error.code).toBe(429);
    expect(body.error.metadata.limit).toBe(limit);
    expect(body.error.metadata.remedy_hint).toEqual(expect.any(String));
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    return body;
  };
  /** Starts the next minute, so per-minute counters are fresh. */
  const nextMinute = () => clock.set((Math.floor(clock.now() / MINUTE) + 1) * MINUTE + 10);

  it('per-minute limit per account and model, shared by every key of the account; X-RateLimit-* describe it', async () => {
    nextMinute();
    const a = await account();
    const second = await gw.admin.createKey(a.id, { name: 'second' });
    for (const key of [a.key, second.key, a.key]) expect((await ask(key, 'f/a:free')).status).toBe(200);
    const refused = await ask(second.key, 'f/a:free');
    const body = await expect429(refused, 'free-models-per-minute');
    const windowEnd = (Math.floor(clock.now() / MINUTE) + 1) * MINUTE;
    expect(refused.headers.get('x-ratelimit-limit')).toBe('3');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(windowEnd));
    expect(Number(refused.headers.get('retry-after'))).toBe(Math.ceil((windowEnd - clock.now()) / 1000));
    expect(body.error.metadata.remedy_hint).toMatch(/f\/a has no platform request cap/);
    expect((await ask(a.key, 'f/b:free')).status).toBe(200); // limits differ per model
    nextMinute();
    expect((await ask(a.key, 'f/a:free')).status).toBe(200);
  });

  it('a model may override the per-minute limit', async () => {
    nextMinute();
    const a = await account();
    expect((await ask(a.key, 'f/two:free')).status).toBe(200);
    expect((await ask(a.key, 'f/two:free')).status).toBe(200);
    await expect429(await ask(a.key, 'f/two:free'), 'free-models-per-minute');
  });

  it('per-day limit per account across all free models, on the UTC day; not a transient error', async () => {
    clock.set(Date.UTC(2026, 10, 18, 22, 0, 10));
    const a = await account(); // nothing purchased: the low ceiling, 5
    const models = ['f/a:free', 'f/b:free', 'f/two:free', 'f/a:free', 'f/b:free'];
    for (const m of models) {
      expect((await ask(a.key, m)).status).toBe(200);
      nextMinute();
    }
    expect((await status(a.key)).free_model_daily_requests).toEqual({ used: 5, limit: 5, remaining: 0 });
    const refused = await ask(a.key, 'f/two:free');
    const body = await expect429(refused, 'free-models-per-day');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(Date.UTC(2026, 10, 19)));
    expect(refused.headers.get('retry-after')).toBeNull();
    expect(body.error.metadata.remedy_hint).toMatch(/2026-11-19T00:00:00.000Z/);
    expect(body.error.metadata.remedy_hint).toMatch(/purchased at least 10 credits get 8 a day/);
    // Paid models have no platform request cap.
    await gw.admin.addCredits(a.id, { amount: 1 });
    expect((await ask(a.key, 'f/a')).status).toBe(200);
    clock.set(Date.UTC(2026, 10, 19, 0, 0, 1)); // the next UTC day
    expect((await status(a.key)).free_model_daily_requests).toEqual({ used: 0, limit: 5, remaining: 5 });
    expect((await ask(a.key, 'f/two:free')).status).toBe(200);
  });

  it('the higher daily ceiling starts one credit below the tier threshold; is_free_tier follows the spec', async () => {
    const below = await account(8.999999999);
    const at = await account(9);
    const ten = await account(10);
    expect(await status(below.key)).toMatchObject({ is_free_tier: false, free_model_daily_requests: { limit: 5 } });
    expect(await status(at.key)).toMatchObject({ is_free_tier: false, free_model_daily_requests: { limit: 8 } });
    expect(await status(ten.key)).toMatchObject({ is_free_tier: true, free_model_daily_requests: { limit: 8 } });
    clock.set(Date.UTC(2026, 10, 20, 1, 0, 10));
    for (let i = 0; i < 8; i++) {
      expect((await ask(at.key, 'f/a:free')).status).toBe(200);
      nextMinute();
    }
    await expect429(await ask(at.key, 'f/b:free'), 'free-models-per-day');
  });

  it('exempt accounts, exempt endpoints and BYOK requests are neither capped nor counted; /key still reports the tier', async () => {
    nextMinute();
    const exempt = await account(0, { free_model_limits_exempt: true });
    for (let i = 0; i < 6; i++) expect((await ask(exempt.key, 'f/a:free')).status).toBe(200);
    expect((await status(exempt.key)).free_model_daily_requests).toEqual({ used: 0, limit: 5, remaining: 5 });

    const plain = await account();
    for (let i = 0; i < 6; i++) expect((await ask(plain.key, 'f/exempt:free')).status).toBe(200);
    expect((await status(plain.key)).free_model_daily_requests.used).toBe(0);

    const byok = await account();
    const put = await gw.fetch(`/api/v1/admin/accounts/${byok.id}/byok/demo`, { method: 'PUT', body: { api_key: 'own-demo-key' }, token: ADMIN_TOKEN });
    expect(put.status).toBe(204);
    for (let i = 0; i < 6; i++) expect((await ask(byok.key, 'f/a:free')).status).toBe(200);
    expect((await status(byok.key)).free_model_daily_requests).toEqual({ used: 0, limit: 5, remaining: 5 });
  });

  it('a platform-wide capacity per model caps all accounts together: more accounts never raise a limit', async () => {
    nextMinute();
    for (let i = 0; i < 3; i++) expect((await ask((await account()).key, 'f/cap:free')).status).toBe(200);
    const body = await expect429(await ask((await account()).key, 'f/cap:free'), 'model-capacity');
    expect(body.error.message).toMatch(/capacity of 3 requests per minute/);
    const exempt = await account(0, { free_model_limits_exempt: true });
    expect((await ask(exempt.key, 'f/cap:free')).status).toBe(200); // exempt: not capped
    nextMinute();
    expect((await ask((await account()).key, 'f/cap:free')).status).toBe(200);
  });

  it('admitted requests count whatever the upstream answers; refused ones do not', async () => {
    nextMinute();
    const a = await account();
    expect((await ask(a.key, 'f/broken:free')).status).toBe(502);
    expect((await status(a.key)).free_model_daily_requests.used).toBe(1);
    for (let i = 0; i < 3; i++) expect((await ask(a.key, 'f/a:free')).status).toBe(200);
    for (let i = 0; i < 3; i++) await expect429(await ask(a.key, 'f/a:free'), 'free-models-per-minute');
    expect((await status(a.key)).free_model_daily_requests.used).toBe(4); // 1 + 3 admitted; the refused did not count
  });

  it('a free model reached as a fallback is limited and counted too', async () => {
    nextMinute();
    const a = await account(1);
    const viaFallback = (body: Record<string, unknown>) =>
      gw.fetch('/api/v1/chat/completions', { token: a.key, body: { max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], ...body } });
    // `ignore` removing every endpoint leaves nothing to serve: a 400, and nothing is counted.
    expect((await viaFallback({ model: 'f/a', models: ['f/a', 'f/two:free'], provider: { ignore: ['demo'] } })).status).toBe(400);
    // The broken free primary fails; the free fallback serves. Both count (one daily request each time).
    for (let i = 0; i < 2; i++) {
      const res = await viaFallback({ model: 'f/broken:free', models: ['f/broken:free', 'f/two:free'] });
      expect(((await res.json()) as { model: string }).model).toBe('f/two:free');
    }
    expect((await status(a.key)).free_model_daily_requests.used).toBe(2);
    // A paid primary that serves never touches the free fallback: not counted, not refused.
    const paid = await viaFallback({ model: 'f/a', models: ['f/a', 'f/two:free'] });
    expect(((await paid.json()) as { model: string }).model).toBe('f/a');
    expect((await status(a.key)).free_model_daily_requests.used).toBe(2);
    // f/two:free has had its 2 this minute: when the primary fails, the fallback's limit answers.
    await expect429(await viaFallback({ model: 'f/broken:free', models: ['f/broken:free', 'f/two:free'] }), 'free-models-per-minute');
    expect((await status(a.key)).free_model_daily_requests.used).toBe(3); // f/broken:free was tried, so it counts
  });

  it('checks run in order: a negative balance (402) comes before the free-model limits (429)', async () => {
    nextMinute();
    const a = await account(1);
    for (let i = 0; i < 3; i++) await ask(a.key, 'f/a:free');
    await gw.admin.addCredits(a.id, { amount: -2, kind: 'adjustment' });
    const res = await ask(a.key, 'f/a:free');
    expect(res.status).toBe(402);
    expect(((await res.json()) as Err).error.metadata.limit_source).toBe('platform_credits');
  });

  it('successful answers carry no X-RateLimit-* header', async () => {
    nextMinute();
    const a = await account(1);
    for (const model of ['f/a:free', 'f/a']) {
      const res = await ask(a.key, model);
      expect(res.status).toBe(200);
      expect([...res.headers.keys()].filter((h) => h.startsWith('x-ratelimit'))).toEqual([]);
    }
  });

  it('the official openai client sees a platform 429 as a RateLimitError with our headers', async () => {
    nextMinute();
    const a = await account();
    const client = new OpenAI({ baseURL: `${gw.base}/api/v1`, apiKey: a.key, maxRetries: 0 });
    for (let i = 0; i < 2; i++) await client.chat.completions.create({ model: 'f/two:free', messages: [{ role: 'user', content: 'hi' }] });
    const err = await client.chat.completions.create({ model: 'f/two:free', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    const e = err as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.headers?.get('x-ratelimit-limit')).toBe('2');
    expect(e.headers?.get('x-ratelimit-reset')).toMatch(/^\d{13}$/);
    expect((e.error as { metadata: { limit: string } }).metadata.limit).toBe('free-models-per-minute');
  });
});

describe('DDoS guard', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 0, 100));
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ limits: { ddos: { per_ip_per_second: 5 } } }, clock);
  });
  afterAll(() => gw.close());

  it('refuses a client address past its per-second rate before looking at the key, with X-RateLimit-*', async () => {
    for (let i = 0; i < 5; i++) expect((await gw.fetch('/api/v1/models')).status).toBe(200);
    const refused = await gw.fetch('/api/v1/key', { token: 'not-even-a-key' });
    expect(refused.status).toBe(429); // not 401: the guard runs first
    const body = (await refused.json()) as Err;
    expect(body.error.metadata.limit).toBe('ddos');
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-reset')).toBe(String(Date.UTC(2026, 10, 18, 9, 0, 1)));
    expect((await gw.fetch('/health')).status).toBe(200); // health checks are never refused
    clock.advance(1000);
    expect((await gw.fetch('/api/v1/models')).status).toBe(200);
  });
});
