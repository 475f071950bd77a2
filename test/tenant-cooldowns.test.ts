import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, type Script } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

const ok: Script = {
  kind: 'json',
  body: {
    id: 'u',
    object: 'chat.completion',
    created: 1,
    model: 'small-v1',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  },
};
const limited = (headers: Record<string, string>): Script => ({
  kind: 'json',
  status: 429,
  body: { error: { code: 'insufficient_quota', message: 'you exceeded your quota' } },
  headers,
});

const PLATFORM_KEY = 'sk-platform-key-0123456789';
const BYOK_KEY = 'sk-account-a-own-key-0123456789';

describe('issue 7 item 6: one tenant must not switch an endpoint off for everyone', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 23, 9));
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway(
      {
        providers: [{ id: 'acme', type: 'openai', base_url: base, api_key: PLATFORM_KEY }],
        models: [{ id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small-v1', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });
  beforeEach(() => clock.advance(24 * 3_600_000)); // no cooldown carries over between tests

  const ask = (key: string) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'acme/small', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] } });
  const byokAccount = async () => {
    const a = await gw.account(10);
    const put = await gw.fetch(`/api/v1/admin/accounts/${a.id}/byok/acme`, { method: 'PUT', token: ADMIN_TOKEN, body: { api_key: BYOK_KEY } });
    expect(put.status).toBeLessThan(300);
    return a;
  };
  const sentWith = () => upstream.received.at(-1)?.headers.authorization;

  it("account A's exhausted BYOK key does not put the endpoint on a cooldown for account B", async () => {
    const a = await byokAccount();
    const b = await gw.account(10);
    upstream.script(limited({ 'retry-after': '3600' }), ok);
    const refused = await ask(a.key);
    expect(refused.status).toBe(429);
    expect(sentWith()).toBe(`Bearer ${BYOK_KEY}`);

    // B (platform key) is still served by that endpoint.
    const served = await ask(b.key);
    expect(served.status).toBe(200);
    expect(((await served.json()) as { provider: string }).provider).toBe('acme');
    expect(sentWith()).toBe(`Bearer ${PLATFORM_KEY}`);

    // A's own key still cools down: its next request is not sent upstream.
    const before = upstream.received.length;
    const again = await ask(a.key);
    expect(again.status).toBe(429);
    expect(upstream.received.length).toBe(before);
    // The Retry-After sent is what the upstream asked for (CONTRACT §6: the smallest hint); the cooldown
    // is capped at routing.max_cooldown_ms (60 s by default): past it the endpoint is tried again.
    expect(again.headers.get('retry-after')).toBe('3600');
    clock.advance(60_001);
    upstream.script(ok);
    expect((await ask(a.key)).status).toBe(200);
    expect(upstream.received.length).toBe(before + 1);
  });

  it("a platform key's cooldown does not stop an account that brings its own key", async () => {
    const a = await byokAccount();
    const b = await gw.account(10);
    upstream.script(limited({ 'retry-after': '30' }), ok);
    expect((await ask(b.key)).status).toBe(429);
    const served = await ask(a.key);
    expect(served.status).toBe(200);
    expect(sentWith()).toBe(`Bearer ${BYOK_KEY}`);
  });

  for (const hint of ['9'.repeat(400), '1e400', '99999999999999999999', '1e30']) {
    it(`an absurd retry-after-ms (${hint.length > 24 ? `${hint.slice(0, 8)}… ${hint.length} digits` : hint}) cools down for at most the cap, and Retry-After is a positive integer of at most a day`, async () => {
      const b = await gw.account(10);
      upstream.script(limited({ 'retry-after-ms': hint }), ok);
      const first = await ask(b.key);
      expect(first.status).toBe(429);
      for (const res of [first, await ask(b.key)]) {
        const retryAfter = res.headers.get('retry-after');
        expect(retryAfter).toBe('86400');
      }
      const before = upstream.received.length;
      clock.advance(60_001);
      const served = await ask(b.key);
      expect(served.status).toBe(200);
      expect(upstream.received.length).toBe(before + 1);
    });
  }
});
