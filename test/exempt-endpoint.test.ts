import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §2: `free_limits_exempt: false   # true: this endpoint is exempt from free-model limits`.
 * CONTRACT §7: "Requests exempt from the limits (exempt account, exempt endpoint, BYOK) are not counted
 * and not capped, `capacity_per_minute` included".
 *
 * A free model whose first endpoint is exempt and whose second is not: a request served by the exempt
 * endpoint is neither counted nor capped (each attempt is judged by its own endpoint).
 */
describe('a request served by a free_limits_exempt endpoint is neither counted nor capped', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 12, 0, 5));
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway(
      {
        providers: [
          { id: 'exempt', type: 'demo', token_latency_ms: 0 },
          { id: 'other', type: 'demo', token_latency_ms: 0 },
        ],
        models: [
          {
            id: 'm/x:free',
            per_minute: 1,
            endpoints: [
              { provider: 'exempt', model: 'echo', pricing: { prompt: '0', completion: '0' }, free_limits_exempt: true },
              { provider: 'other', model: 'echo', pricing: { prompt: '0', completion: '0' } },
            ],
          },
        ],
      },
      clock,
    );
  });
  afterAll(() => gw.close());

  it('two requests within a minute, per_minute 1, both served by the exempt endpoint: both 200, none counted', async () => {
    const acct = await gw.account(1);
    const ask = () => gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'm/x:free', messages: [{ role: 'user', content: 'hi' }] } });
    const first = await ask();
    expect(first.status).toBe(200);
    expect(((await first.json()) as { provider: string }).provider).toBe('exempt');
    const second = await ask();
    expect(second.status).toBe(200);
    const key = (await (await gw.fetch('/api/v1/key', { token: acct.key })).json()) as { data: { free_model_daily_requests: { used: number } } };
    expect(key.data.free_model_daily_requests.used).toBe(0);
  });
});
