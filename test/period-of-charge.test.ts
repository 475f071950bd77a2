import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, upstreamAnswer as answer } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

// Only completion tokens cost, 0.01 credit each: an estimate is max_tokens × 0.01.
const perToken = { prompt: '0', completion: '0.01' };

// The spec charges a request "when the request finishes": its charge counts in the key's usage of the
// period it ends in, and so, while it runs, its hold counts against the period under way. A request
// started before 00:00 UTC and ending after it counts in the new day, its hold and its charge alike
// (before, the hold counted in the new day and the charge in the old one).
describe('a request running across 00:00 UTC and a daily key limit', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 23, 59, 0)); // Wednesday 23:59 UTC
  const slow = new ScriptedUpstream();
  const fast = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [slowUrl, fastUrl] = await Promise.all([slow.start(), fast.start()]);
    slow.script({ kind: 'json', body: answer(10), hold: true });
    fast.script({ kind: 'json', body: answer(10) });
    gw = await startTestGateway(
      {
        limits: { in_flight: { balance_threshold: 1 } }, // no in-flight budget in the way
        providers: [
          { id: 'slow', type: 'openai', base_url: slowUrl },
          { id: 'fast', type: 'openai', base_url: fastUrl },
        ],
        models: [
          { id: 't/slow', context_length: 100_000, endpoints: [{ provider: 'slow', model: 'm', pricing: perToken }] },
          { id: 't/quick', context_length: 100_000, endpoints: [{ provider: 'fast', model: 'm', pricing: perToken }] },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    slow.release();
    await gw.close();
    await Promise.all([slow.stop(), fast.stop()]);
  });

  const ask = (key: string, model: string, maxTokens: number) =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content: 'hi' }], max_tokens: maxTokens } });

  it("counts in the day it ends in: its hold, then its charge, against the new day's limit", async () => {
    const acct = await gw.account(50, { limit: 1, limit_reset: 'daily' });
    const running = ask(acct.key, 't/slow', 90); // holds 0.9 of the limit while it runs
    await slow.waitHolding(1);
    clock.set(Date.UTC(2026, 10, 19, 0, 0, 5)); // Thursday: a fresh daily limit of 1
    // The running request will be charged on Thursday: its 0.9 leaves no room for 0.5.
    const refused = await ask(acct.key, 't/quick', 50);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { metadata: Record<string, unknown> } }).error.metadata.limit_source).toBe('platform_key_limit');
    slow.release();
    const done = await running;
    expect(done.status).toBe(200);
    const id = ((await done.json()) as { id: string }).id;
    await gw.ledger.flush();
    const usage = async () => ((await (await gw.fetch('/api/v1/key', { token: acct.key })).json()) as { data: Record<string, number> }).data;
    // Charged 10 tokens × 0.01 = 0.1, in Thursday's usage; the generation keeps its start (Wednesday).
    expect(await usage()).toMatchObject({ usage_daily: 0.1, usage: 0.1 });
    const generation = (await gw.ledger.getGeneration(id)) as { createdAt: number };
    expect(new Date(generation.createdAt).toISOString()).toBe('2026-11-18T23:59:00.000Z');
    // The spend report counts it in Thursday too (the hour it was charged in), as the key's usage does.
    const report = (await (await gw.fetch(`/api/v1/admin/reports/spend?from=2026-11-18&to=2026-11-20&account=${acct.id}`, { token: ADMIN_TOKEN })).json()) as {
      data: Array<{ start: string; cost: number; requests: number }>;
    };
    expect(report.data.map((r) => [r.start.slice(0, 10), r.cost, r.requests])).toEqual([['2026-11-19', 0.1, 1]]);
    // Now 0.5 fits in what is left of Thursday's limit.
    expect((await ask(acct.key, 't/quick', 50)).status).toBe(200);
    await gw.ledger.flush();
    expect(await usage()).toMatchObject({ usage_daily: 0.2 });
  });
});
