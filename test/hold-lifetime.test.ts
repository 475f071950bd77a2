import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { readSse } from './helpers/sse.js';
import { ScriptedUpstream, upstreamAnswer as answer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// Only completion tokens cost, 0.01 credit each: a request's estimate is max_tokens × 0.01.
const perToken = { prompt: '0', completion: '0.01' };
const WINDOW = 60_000;
const DEADLINE = 800_000; // above the old running-hold TTL (600 s + the window = 660 s)
const chunk = (text: string) => JSON.stringify({ id: 'u', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: text } }] });
const finalChunk = JSON.stringify({
  id: 'u',
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
  usage: { prompt_tokens: 5, completion_tokens: 10, total_tokens: 15 },
});

describe('issue 7 items 5 and 7: hold lifetime and Retry-After', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9));
  const streaming = new ScriptedUpstream(); // two events, then held open until released
  const slow = new ScriptedUpstream(); // every answer held until released
  const fast = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [streamUrl, slowUrl, fastUrl] = await Promise.all([streaming.start(), slow.start(), fast.start()]);
    streaming.script({ kind: 'sse', events: [chunk('one'), chunk('two'), chunk('three'), finalChunk], holdAfter: 2 });
    slow.script({ kind: 'json', body: answer(100), hold: true });
    fast.script({ kind: 'json', body: answer(10) });
    const timeouts_ms = { first_byte: 30_000, idle: 30_000, total: 300_000 };
    gw = await startTestGateway(
      {
        limits: {
          in_flight: { fraction: 0.5, ceiling: 20, balance_threshold: 100, settlement_window_ms: WINDOW, default_max_tokens: 4096 },
          request_deadline_ms: DEADLINE,
        },
        providers: [
          { id: 'streaming', type: 'openai', base_url: streamUrl, timeouts_ms },
          { id: 'slow', type: 'openai', base_url: slowUrl, timeouts_ms },
          { id: 'fast', type: 'openai', base_url: fastUrl, timeouts_ms },
        ],
        models: [
          { id: 't/stream', context_length: 100_000, endpoints: [{ provider: 'streaming', model: 'm', pricing: perToken }] },
          { id: 't/slow', context_length: 100_000, endpoints: [{ provider: 'slow', model: 'm', pricing: perToken }] },
          { id: 't/quick', context_length: 100_000, endpoints: [{ provider: 'fast', model: 'm', pricing: perToken }] },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    streaming.release();
    slow.release();
    await gw.close();
    await Promise.all([streaming.stop(), slow.stop(), fast.stop()]);
  });

  const ask = (key: string, model: string, maxTokens: number, stream = false) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens, stream } });
  const accountWith = async (credits: number, keyBody: Record<string, unknown> = {}) => {
    const acct = await gw.admin.createAccount({ name: 'lifetime' });
    await gw.admin.addCredits(acct.id, { amount: credits });
    const { key } = await gw.admin.createKey(acct.id, keyBody);
    return { id: acct.id, key };
  };
  const reasonOf = async (res: Response) => ((await res.json()) as { error: { metadata: Record<string, unknown> } }).error.metadata;

  describe('issue 7 item 5: holds outlive their request', () => {
    it('a stream running past the old hold TTL still holds its amount against the key limit and the balance; its holds end with it', async () => {
      const limited = await accountWith(10, { limit: 3 }); // key limit 3; in-flight budget 5
      const rich = await accountWith(150); // at or above balance_threshold: only the balance bounds it
      const before = streaming.holding;
      const first = ask(limited.key, 't/stream', 200, true); // holds 2 of the key's 3
      const big = ask(rich.key, 't/stream', 10_000, true); // holds 100 of the balance's 150
      await streaming.waitHolding(before + 2);

      clock.advance(700_000); // past the old running-hold TTL (660 s), within the request deadline
      const overKey = await ask(limited.key, 't/quick', 200); // 2 + 2 > 3
      expect(overKey.status).toBe(402);
      expect((await reasonOf(overKey)).limit_source).toBe('platform_key_limit');
      const overBalance = await ask(rich.key, 't/quick', 6000); // 100 + 60 > 150
      expect(overBalance.status).toBe(402);
      expect((await reasonOf(overBalance)).limit_source).toBe('platform_credits');
      expect((await gw.admin.getAccount(limited.id)).in_flight!.held).toBe(2);

      streaming.release();
      for (const r of await Promise.all([first, big])) expect((await readSse(r)).at(-1)).toBe('[DONE]');
      // Each stream cost 10 tokens (0.1): its running holds are gone, its actual cost settles for the window.
      expect((await gw.admin.getAccount(limited.id)).in_flight!.held).toBeCloseTo(0.1, 9);
      expect((await ask(limited.key, 't/quick', 200)).status).toBe(200); // 0.1 used + 2 ≤ 3
      expect((await ask(rich.key, 't/quick', 6000)).status).toBe(200); // 150 − 0.1 ≥ 60
      clock.advance(WINDOW);
      expect((await gw.admin.getAccount(limited.id)).in_flight!.held).toBe(0);
    });

    it('the request deadline fires: the request is cut, charged for what it delivered, and its holds end', async () => {
      const acct = await accountWith(10, { limit: 3 });
      const before = streaming.holding;
      const res = await ask(acct.key, 't/stream', 200, true);
      await streaming.waitHolding(before + 1);
      // Read until the client has both delivered events: the stream is relaying, held open upstream.
      const reader = (res.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes('"two"')) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }

      clock.advance(DEADLINE); // nothing else ends the stream: the upstream holds it open
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += decoder.decode(r.value, { stream: true });
      const events = await readSse(new Response(text));
      const last = events.at(-1) as Record<string, any>;
      expect(last.error).toBeDefined(); // the stream ended with the spec's error event
      expect(String(last.error.message)).toContain('deadline'); // the deadline's, not an upstream timeout's
      const delivered = events.filter((e) => typeof e === 'object' && (e as any).choices?.[0]?.delta?.content).length;
      expect(delivered).toBe(2);
      // Charged for what was delivered (counted by the gateway), not the hold of 2.
      const used = (await gw.admin.getAccount(acct.id)).total_usage;
      expect(used).toBeGreaterThan(0);
      expect(used).toBeLessThan(0.5);
      expect((await ask(acct.key, 't/quick', 200)).status).toBe(200); // the key's running hold is gone
      clock.advance(WINDOW);
      expect((await gw.admin.getAccount(acct.id)).in_flight!.held).toBe(0);
      streaming.release();
    });
  });

  describe('issue 7 item 7: Retry-After that works', () => {
    it('running requests fill the budget: a client that waits Retry-After and retries is admitted', async () => {
      const acct = await accountWith(14);
      // The model's recent requests took 20 s each (and cost 1.0 each: the budget is then 0.5 × 11 = 5.5).
      for (let i = 0; i < 3; i++) {
        const before = slow.holding;
        const r = ask(acct.key, 't/slow', 100);
        await slow.waitHolding(before + 1);
        clock.advance(20_000);
        slow.release();
        expect((await r).status).toBe(200);
      }
      clock.advance(WINDOW); // their settled costs are gone

      const before = slow.holding;
      const running = Array.from({ length: 5 }, () => ask(acct.key, 't/slow', 100)); // 5 × 1.0 held, 1.0 more does not fit
      await slow.waitHolding(before + 5);
      const refused = await ask(acct.key, 't/slow', 100);
      expect(refused.status).toBe(402);
      expect((await reasonOf(refused)).reason).toBe('in_flight_budget_exhausted');
      const header = refused.headers.get('retry-after') ?? '';
      expect(header).toMatch(/^[1-9]\d*$/);
      const wait = Number(header) * 1000;

      // The running requests finish in the model's typical time, and settle (1.0 each) for the window.
      clock.advance(20_000);
      slow.release();
      for (const r of await Promise.all(running)) expect(r.status).toBe(200);
      clock.advance(wait - 20_000);
      expect((await ask(acct.key, 't/quick', 100)).status).toBe(200);
    });
  });
});
