import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, upstreamAnswer as answer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/*
 * Spec, States and transitions (in-flight spending budget), row "(no hold) → Held at estimate":
 *   "The estimate is input tokens plus completion tokens allowed by max_tokens, at the endpoint's token prices."
 * Spec, same table: "Cost has no token component (only per-request fees, plugin charges or image pricing) → Not held."
 * CONTRACT §7: "In-flight estimate: input tokens × prompt price + completion cap × completion price, at the
 * most expensive endpoint the request may be routed to."
 * Spec, 402 table: weight_exceeds_budget is "One request's estimated cost exceeds the whole in-flight budget".
 *
 * So the in-flight budget holds the token estimate (src/admission/estimate.ts, `tokenCredits`): a request
 * fee (or plugin charges) on top does not refuse a request whose token estimate fits the budget. The
 * balance still has to cover all of it.
 */
describe('the in-flight estimate is the token estimate only', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9));
  const fast = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const url = await fast.start();
    fast.script({ kind: 'json', body: answer(10) });
    gw = await startTestGateway(
      {
        limits: { in_flight: { fraction: 0.5, ceiling: 20, balance_threshold: 100, settlement_window_ms: 60_000, default_max_tokens: 4096 } },
        providers: [{ id: 'fast', type: 'openai', base_url: url }],
        models: [
          // Only completion tokens priced (0.01 each), plus a per-request fee of 0.5.
          { id: 't/fee', context_length: 100_000, endpoints: [{ provider: 'fast', model: 'm', pricing: { prompt: '0', completion: '0.01', request: '0.5' } }] },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await fast.stop();
  });

  it('balance 10 (budget 5): max_tokens 480 is a token estimate of 4.8, which fits the budget: admitted, not weight_exceeds_budget', async () => {
    const acct = await gw.account(10); // budget = min(0.5 × 10, 20) = 5; balance covers 4.8 + 0.5 fee too
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/fee', max_tokens: 480, messages: [{ role: 'user', content: 'hi' }] },
    });
    const body = (await res.json()) as { error?: { metadata?: Record<string, unknown> } };
    expect(body.error?.metadata).toBeUndefined();
    expect(res.status).toBe(200);
  });
});
