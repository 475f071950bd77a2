import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// /metrics takes the admin token (CONTRACT §10), so a wrong token there is a guess at it: it meets
// the DDoS guard and has its log line, as anywhere else. Only the load balancers' probes (/health,
// /health/ready) skip both; /metrics did too.
describe('/metrics: failed authentication is rate limited and logged like on any other route', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 0, 100));
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ limits: { ddos: { per_ip_per_second: 2 } } }, clock);
  });
  afterAll(async () => {
    await gw.close();
  });

  it('guesses of the admin token at /metrics meet the DDoS guard', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await gw.fetch('/metrics', { token: `guess-${i}-0123456789abcdef` });
      statuses.push(res.status);
      await res.text();
    }
    expect(statuses).toContain(429);
  });

  it('a refused /metrics request has its log line', async () => {
    clock.advance(5000);
    const res = await gw.fetch('/metrics', { token: 'wrong-token-0123456789', headers: { 'x-request-id': 'metrics-401' } });
    expect(res.status).toBe(401);
    await res.text();
    await new Promise((r) => setTimeout(r, 100));
    expect(gw.log.text).toContain('"reqId":"metrics-401"');
  });
});
