import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, upstreamAnswer as answer } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

// Prices make estimates easy to read: only completion tokens cost, 0.01 credit each, so a request's
// estimate is max_tokens × 0.01 and an answer of 10 completion tokens costs 0.1.
const perToken = { prompt: '0', completion: '0.01' };
const WINDOW = 60_000;

interface Err {
  error: { code: number; message: string; metadata: Record<string, any> };
}

describe('credit limits (spec: Errors / 402, Limits / Credit limits, States and transitions)', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9)); // a Wednesday, 09:00 UTC
  const slow = new ScriptedUpstream(); // holds every answer until released
  const fast = new ScriptedUpstream();
  const search = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [slowUrl, fastUrl, searchUrl] = await Promise.all([slow.start(), fast.start(), search.start()]);
    slow.script({ kind: 'json', body: answer(100), hold: true });
    fast.script({ kind: 'json', body: answer(10) });
    search.script({ kind: 'json', body: { results: [{ title: 'T', url: 'https://example.test', text: 'found' }] } });
    gw = await startTestGateway(
      {
        limits: { in_flight: { fraction: 0.5, ceiling: 20, balance_threshold: 100, settlement_window_ms: WINDOW, default_max_tokens: 4096 } },
        providers: [
          { id: 'slow', type: 'openai', base_url: slowUrl },
          { id: 'fast', type: 'openai', base_url: fastUrl },
        ],
        models: [
          { id: 't/slow', context_length: 100_000, endpoints: [{ provider: 'slow', model: 'm', pricing: perToken }] },
          { id: 't/quick', context_length: 100_000, endpoints: [{ provider: 'fast', model: 'm', pricing: perToken }] },
          { id: 't/quick:free', endpoints: [{ provider: 'fast', model: 'm', pricing: { prompt: '0', completion: '0' } }] },
          { id: 't/fee-only', endpoints: [{ provider: 'fast', model: 'm', pricing: { prompt: '0', completion: '0', request: '0.5' } }] },
          {
            id: 't/two-prices',
            context_length: 100_000,
            endpoints: [
              { provider: 'fast', model: 'm', pricing: perToken },
              { provider: 'slow', model: 'm', pricing: { prompt: '0', completion: '0.03' } },
            ],
          },
        ],
        plugins: { web: { search_url: `${searchUrl.replace(/\/v1$/, '')}/search`, price: '0.25' } },
      },
      clock,
    );
  });
  afterAll(async () => {
    slow.release();
    await gw.close();
    await Promise.all([slow.stop(), fast.stop(), search.stop()]);
  });

  const ask = (key: string, model: string, maxTokens?: number, extra: Record<string, unknown> = {}) =>
    gw.fetch('/api/v1/chat/completions', {
      token: key,
      body: { model, messages: [{ role: 'user', content: 'hi' }], ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }), ...extra },
    });
  const accountWith = async (credits: number, body: Record<string, unknown> = {}, keyBody: Record<string, unknown> = {}) => {
    const acct = await gw.admin.createAccount({ name: 'limits', ...body });
    if (credits > 0) await gw.admin.addCredits(acct.id, { amount: credits });
    const { key, data } = await gw.admin.createKey(acct.id, keyBody);
    return { id: acct.id, key, hash: data.hash };
  };
  /** Starts `n` requests on the slow upstream and resolves once all of them are held there. */
  const holdRunning = async (key: string, n: number, maxTokens = 100) => {
    const before = slow.holding;
    const responses = Array.from({ length: n }, () => ask(key, 't/slow', maxTokens));
    await slow.waitHolding(before + n);
    return responses;
  };
  const expect402 = async (res: Response, source: string, reason?: string) => {
    expect(res.status).toBe(402);
    const body = (await res.json()) as Err;
    expect(body.error.code).toBe(402);
    expect(body.error.metadata.limit_source).toBe(source);
    expect(body.error.metadata.remedy_hint).toEqual(expect.any(String));
    if (reason) expect(body.error.metadata.reason).toBe(reason);
    else expect(body.error.metadata.reason).toBeUndefined();
    return body;
  };

  describe('the 402 table', () => {
    it('in_flight_budget_exhausted: running and recently completed requests fill the budget; Retry-After says when it frees up', async () => {
      const acct = await accountWith(10); // budget = min(0.5 × 10, 20) = 5
      const running = await holdRunning(acct.key, 5); // 5 × 1.0 held
      expect((await gw.admin.getAccount(acct.id)).in_flight).toEqual({ subject: true, budget: 5, held: 5 });
      const reached = slow.received.length;
      const refused = await ask(acct.key, 't/slow', 100);
      const body = await expect402(refused, 'platform_in_flight_budget', 'in_flight_budget_exhausted');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(body.error.metadata).toMatchObject({ in_flight_budget: 5, in_flight_held: 5, estimated_cost: 1 });
      expect(slow.received.length).toBe(reached); // spec rule 1: refused before reaching any provider

      slow.release();
      for (const r of await Promise.all(running)) expect(r.status).toBe(200);
      // No request runs now, but the 5 actual costs (1.0 each) settle for the window: balance 5,
      // budget 2.5, held 5. Enough is released when the window of those costs ends: 60 s.
      const settling = await ask(acct.key, 't/quick', 100);
      await expect402(settling, 'platform_in_flight_budget', 'in_flight_budget_exhausted');
      expect(settling.headers.get('retry-after')).toBe('60');
      clock.advance(WINDOW);
      expect((await ask(acct.key, 't/quick', 100)).status).toBe(200);
    });

    it('weight_exceeds_budget: one request whose estimate exceeds the whole budget; no Retry-After', async () => {
      const acct = await accountWith(10);
      const refused = await ask(acct.key, 't/quick', 600); // 6 > 5
      await expect402(refused, 'platform_credits', 'weight_exceeds_budget');
      expect(refused.headers.get('retry-after')).toBeNull();
      expect((await ask(acct.key, 't/quick', 500)).status).toBe(200); // exactly the budget fits
    });

    it("platform_key_limit: the key cannot cover the estimate while the account's other keys still work", async () => {
      const acct = await accountWith(50, {}, { limit: 1, limit_reset: 'daily' });
      const other = await gw.admin.createKey(acct.id, { name: 'other' });
      expect((await ask(acct.key, 't/quick', 95)).status).toBe(200); // costs 0.1; 0.9 left
      const refused = await ask(acct.key, 't/quick', 95);
      const body = await expect402(refused, 'platform_key_limit');
      expect(body.error.metadata).toMatchObject({ limit: 1, limit_remaining: 0.9, limit_reset: 'daily', estimated_cost: 0.95 });
      expect(body.error.metadata.remedy_hint).toMatch(/2026-11-19T00:00:00.000Z/);
      expect((await ask(other.key, 't/quick', 95)).status).toBe(200);
      expect((await ask(acct.key, 't/quick', 90)).status).toBe(200); // 0.9 still fits
      const status = ((await (await gw.fetch('/api/v1/key', { token: acct.key })).json()) as { data: Record<string, unknown> }).data;
      expect(status).toMatchObject({ limit: 1, limit_reset: 'daily', limit_remaining: 0.8, usage_daily: 0.2 });
      clock.set(Date.UTC(2026, 10, 19, 0, 0, 1)); // the next UTC day resets a daily limit
      expect((await ask(acct.key, 't/quick', 95)).status).toBe(200);
    });

    it('platform_key_limit: concurrent requests on one key cannot together exceed its limit', async () => {
      const acct = await accountWith(50, {}, { limit: 1 });
      const [first] = await holdRunning(acct.key, 1, 60);
      await expect402(await ask(acct.key, 't/quick', 60), 'platform_key_limit');
      slow.release();
      expect((await first)?.status).toBe(200);
    });

    it('platform_key_limit: with include_byok_in_limit, BYOK usage at list price counts against the key', async () => {
      const acct = await accountWith(10, {}, { limit: 1, include_byok_in_limit: true });
      const plain = await gw.admin.createKey(acct.id, { limit: 1 });
      const put = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/byok/fast`, { method: 'PUT', body: { api_key: 'own-key' }, token: ADMIN_TOKEN });
      expect(put.status).toBe(204);
      // A BYOK request's list cost is 100 × 0.01 = 1 (the fee charged is 5% of it): against a limit of 1
      // that counts BYOK, the fee on top does not fit; a key that leaves BYOK out admits it.
      await expect402(await ask(acct.key, 't/quick', 100), 'platform_key_limit');
      expect((await ask(plain.key, 't/quick', 100)).status).toBe(200);
      expect((await ask(acct.key, 't/quick', 50)).status).toBe(200); // 10 tokens answered: list 0.1
      const status = ((await (await gw.fetch('/api/v1/key', { token: acct.key })).json()) as { data: Record<string, number> }).data;
      expect(status.byok_usage).toBe(0.1);
      expect(status.usage).toBe(0.005);
      expect(status.limit_remaining).toBe(0.895); // 1 − 0.005 − 0.1
    });

    it('platform_credits: the balance cannot cover the request', async () => {
      const acct = await accountWith(150); // at or above the threshold: no in-flight budget
      const body = await expect402(await ask(acct.key, 't/quick', 20_000), 'platform_credits'); // 200 > 150
      expect(body.error.metadata).toMatchObject({ balance_available: 150, estimated_cost: 200 });
      expect((await ask(acct.key, 't/quick', 14_000)).status).toBe(200);
      // Running requests reserve what they may cost, so a burst cannot overdraw the balance either.
      const [first] = await holdRunning(acct.key, 1, 10_000);
      await expect402(await ask(acct.key, 't/quick', 6_000), 'platform_credits');
      slow.release();
      expect((await first)?.status).toBe(200);
    });
  });

  describe('the 402 rules', () => {
    it('rule 1: an in-flight 402 comes before any provider is called, even when the balance is positive', async () => {
      const acct = await accountWith(10);
      const running = await holdRunning(acct.key, 5);
      const reachedFast = fast.received.length;
      await expect402(await ask(acct.key, 't/quick', 100), 'platform_in_flight_budget', 'in_flight_budget_exhausted');
      expect(fast.received.length).toBe(reachedFast);
      expect((await gw.admin.getAccount(acct.id)).balance).toBe(10);
      slow.release();
      await Promise.all(running);
    });

    it('rule 2: a negative balance refuses every request, free models too, until credits bring it above zero', async () => {
      const acct = await accountWith(10);
      await gw.admin.addCredits(acct.id, { amount: -15, kind: 'adjustment' });
      const free = await expect402(await ask(acct.key, 't/quick:free'), 'platform_credits');
      expect(free.error.message).toMatch(/negative/);
      await expect402(await ask(acct.key, 't/quick', 10), 'platform_credits');
      await gw.admin.addCredits(acct.id, { amount: 10 });
      expect((await ask(acct.key, 't/quick:free')).status).toBe(200);
    });

    it('rule 3: limit_source (with reason) tells the cases apart for clients to branch on', async () => {
      const acct = await accountWith(1); // budget 0.5
      const cannotCover = await expect402(await ask(acct.key, 't/quick'), 'platform_credits'); // 40.96 > 1
      expect(cannotCover.error.metadata.reason).toBeUndefined();
      await expect402(await ask(acct.key, 't/quick', 60), 'platform_credits', 'weight_exceeds_budget'); // 0.6 > 0.5
      const keyed = await accountWith(5, {}, { limit: 0.1 });
      await expect402(await ask(keyed.key, 't/quick', 20), 'platform_key_limit'); // 0.2 > 0.1
    });
  });

  describe('which requests the in-flight budget applies to', () => {
    it('applies to prepaid accounts below the balance threshold; at or above it, not', async () => {
      const below = await accountWith(99.99); // budget min(49.995, 20) = 20
      await expect402(await ask(below.key, 't/quick', 2_500), 'platform_credits', 'weight_exceeds_budget');
      const at = await accountWith(100);
      expect((await ask(at.key, 't/quick', 2_500)).status).toBe(200);
    });

    it('a larger balance raises the budget, up to the ceiling', async () => {
      const thirty = await accountWith(30); // budget 15
      await expect402(await ask(thirty.key, 't/quick', 1_600), 'platform_credits', 'weight_exceeds_budget');
      const sixty = await accountWith(60); // budget min(30, 20) = 20
      expect((await ask(sixty.key, 't/quick', 1_600)).status).toBe(200);
      await expect402(await ask(sixty.key, 't/quick', 2_100), 'platform_credits', 'weight_exceeds_budget');
    });

    it('does not apply to free-model requests', async () => {
      const acct = await accountWith(10);
      const running = await holdRunning(acct.key, 5);
      expect((await ask(acct.key, 't/quick:free')).status).toBe(200);
      slow.release();
      await Promise.all(running);
    });

    it('does not apply to BYOK requests without a paid plugin; a BYOK request with one is held', async () => {
      const acct = await accountWith(10);
      const admin = (path: string, body: unknown) => gw.fetch(`/api/v1/admin${path}`, { method: 'PUT', body, token: ADMIN_TOKEN });
      expect((await admin(`/accounts/${acct.id}/byok/fast`, { api_key: 'own-fast-key' })).status).toBe(204);
      const running = await holdRunning(acct.key, 5);
      const byok = await ask(acct.key, 't/quick', 100);
      expect(byok.status).toBe(200);
      expect(((await byok.json()) as { usage: { is_byok: boolean } }).usage.is_byok).toBe(true);
      await expect402(await ask(acct.key, 't/quick', 100, { plugins: [{ id: 'web' }] }), 'platform_in_flight_budget', 'in_flight_budget_exhausted');
      slow.release();
      await Promise.all(running);
    });

    it('does not apply to enterprise, subscription or invoice accounts', async () => {
      for (const type of ['enterprise', 'subscription', 'invoice']) {
        const acct = await accountWith(10, { type });
        expect((await ask(acct.key, 't/quick', 600)).status, type).toBe(200); // 6 > what a prepaid budget would be
      }
    });

    it('does not apply to a cost without a token component (per-request fee only)', async () => {
      const acct = await accountWith(10);
      const running = await holdRunning(acct.key, 5);
      const res = await ask(acct.key, 't/fee-only');
      expect(res.status).toBe(200);
      expect(((await res.json()) as { usage: { cost: number } }).usage.cost).toBe(0.5);
      slow.release();
      await Promise.all(running);
    });

    it('holds at the most expensive endpoint the request may be routed to', async () => {
      const acct = await accountWith(10); // budget 5
      // Fast endpoint: 100 × 0.01 = 1; the fallback endpoint: 100 × 0.03 = 3. Two fit (6 > 5 for the third? no: 3 + 3 = 6 > 5).
      const first = await ask(acct.key, 't/two-prices', 200); // estimate 6 > 5 at the expensive endpoint
      await expect402(first, 'platform_credits', 'weight_exceeds_budget');
      expect((await ask(acct.key, 't/two-prices', 160)).status).toBe(200); // 4.8 fits
    });

    it('without max_tokens, the estimate uses default_max_tokens, and the upstream is sent no cap (CONTRACT §7)', async () => {
      const acct = await accountWith(90); // budget 20; 4096 × 0.01 = 40.96
      const body = await expect402(await ask(acct.key, 't/quick'), 'platform_credits', 'weight_exceeds_budget');
      expect(body.error.metadata.estimated_cost).toBe(40.96);
      const rich = await accountWith(200);
      expect((await ask(rich.key, 't/quick')).status).toBe(200);
      // The default cap is for the estimate only: the client's parameters are never changed.
      expect(fast.received.at(-1)?.body).not.toHaveProperty('max_tokens');
      expect(fast.received.at(-1)?.body).not.toHaveProperty('max_completion_tokens');
      expect((await ask(rich.key, 't/quick', undefined, { max_completion_tokens: 7 })).status).toBe(200);
      expect(fast.received.at(-1)?.body).toMatchObject({ max_completion_tokens: 7 });
      expect(fast.received.at(-1)?.body.max_tokens).toBeUndefined();
    });

    it('a request for n completions holds n times the completion cap', async () => {
      const acct = await accountWith(50, {}, { limit: 1.5 });
      expect((await ask(acct.key, 't/quick', 100)).status).toBe(200); // 1.0 fits
      await expect402(await ask(acct.key, 't/quick', 100, { n: 2 }), 'platform_key_limit'); // 2.0 does not
    });
  });

  describe('holds settle', () => {
    /** Starts `n` requests on the slow upstream; resolves when `admitted` are held there. */
    const burst = async (key: string, n: number, admitted: number) => {
      const before = slow.received.length;
      let answered = 0;
      const results = Array.from({ length: n }, () => ask(key, 't/slow', 100).then((r) => ((answered += 1), r)));
      // Release only once every request was decided: `admitted` held upstream, the rest refused.
      await slow.waitHolding(admitted);
      await vi.waitFor(() => expect(answered).toBe(n - admitted));
      slow.release();
      const all = await Promise.all(results);
      expect(slow.received.length - before).toBe(admitted); // the refused never reached the upstream
      for (const r of all.filter((x) => x.status === 402)) await expect402(r, 'platform_in_flight_budget', 'in_flight_budget_exhausted');
      return all.filter((r) => r.status === 200).length;
    };

    it('N parallel requests admit exactly the ones that fit; holds become actual costs; after the window the budget is back', async () => {
      slow.script({ kind: 'json', body: answer(10), hold: true }); // each answer costs 0.1 against a hold of 1
      try {
        const acct = await accountWith(10); // budget 5: five holds of 1 fit
        expect(await burst(acct.key, 8, 5)).toBe(5);
        // Settling: 5 × 0.1 = 0.5; balance 9.5, budget 4.75: four more holds of 1 fit (4.5), a fifth does not.
        expect(await burst(acct.key, 5, 4)).toBe(4);
        // Settling 0.9 now; balance 9.1, budget 4.55: only three fit until the window passes…
        clock.advance(WINDOW);
        // …after it, nothing is held: four fit again.
        expect(await burst(acct.key, 5, 4)).toBe(4);
        expect((await gw.admin.getAccount(acct.id)).balance).toBe(8.7);
      } finally {
        slow.script({ kind: 'json', body: answer(100), hold: true });
      }
    });
  });
});
