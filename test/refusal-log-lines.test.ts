import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { requestLogLine } from './helpers/log-lines.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §10: "the log line of a refused or failed request names its request id, key label, account,
 * model, status, limit_source or limit, and the providers tried." A request refused by a hook before
 * any route runs (the DDoS guard: a platform 429, metadata.limit "ddos") is no exception.
 */
describe('CONTRACT §10: the log line of a refusal made before any route names its limit', () => {
  // A clock that stands still: every request falls in the same second.
  const clock = new ManualClock(Date.UTC(2026, 10, 18, 9, 0, 0, 100));
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ limits: { ddos: { per_ip_per_second: 1 } } }, clock);
  });
  afterAll(async () => {
    await gw.close();
  });

  const lineOf = (reqId: string) => requestLogLine(gw.log, reqId);

  it('a 429 from the DDoS guard: its log line has limit "ddos"', async () => {
    const acct = await gw.account(10);
    const ask = (id: string) =>
      gw.fetch('/api/v1/chat/completions', {
        token: acct.key,
        headers: { 'x-request-id': id },
        body: { model: 'demo/echo', max_tokens: 3, messages: [{ role: 'user', content: 'hi' }] },
      });
    expect((await ask('ddos-first')).status).toBe(200);
    const refused = await ask('ddos-refused');
    expect(refused.status).toBe(429);
    expect(((await refused.json()) as { error: { metadata: { limit: string } } }).error.metadata.limit).toBe('ddos');
    const line = await lineOf('ddos-refused');
    expect(line.status).toBe(429);
    expect(line.limit).toBe('ddos');
  });
});
