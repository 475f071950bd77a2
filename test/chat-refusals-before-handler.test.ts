import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { requestLogLine } from './helpers/log-lines.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §10: "Every answer carries `X-Request-Id`; the log line of a refused or failed request names
 * its request id, key label, account, model, status, `limit_source` or limit, and the providers tried."
 *
 * A chat request whose key was accepted but whose body the gateway refuses before the route's handler
 * runs (malformed JSON: 400; a body over listen.body_limit_mb: 413) is logged with its key label and
 * account (the key was authenticated before the body was read), and counted in the metrics.
 */
describe('refusals made while reading the body still name the key and account, and are counted', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 12));
  let gw: TestGateway;

  beforeAll(async () => {
    gw = await startTestGateway({ listen: { host: '127.0.0.1', port: 0, body_limit_mb: 0.01 } }, clock);
  });
  afterAll(() => gw.close());

  const lineOf = (reqId: string) => requestLogLine(gw.log, reqId);

  it('a 400 for malformed JSON, sent with a valid key: the log line names the key label and account', async () => {
    const acct = await gw.account(10);
    const [key] = await gw.admin.listKeys(acct.id);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { 'x-request-id': 'bad-json', 'content-type': 'application/json' },
      rawBody: '{"model": "demo/echo", ',
    });
    expect(res.status).toBe(400);
    expect(await lineOf('bad-json')).toMatchObject({ status: 400, key_label: key?.label, account: acct.id });
  });

  it('a 413 for a body over the limit, sent with a valid key: the log line names the key label and account', async () => {
    const acct = await gw.account(10);
    const [key] = await gw.admin.listKeys(acct.id);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { 'x-request-id': 'too-big' },
      body: { model: 'demo/echo', messages: [{ role: 'user', content: 'x'.repeat(20_000) }] },
    });
    expect(res.status).toBe(413);
    expect(await lineOf('too-big')).toMatchObject({ status: 413, key_label: key?.label, account: acct.id });
  });
  /**
   * CONTRACT §10: "`GET /metrics` ... At least: `tollgate_requests_total{model,provider,status}`": the
   * chat requests answered 401 (bad key), 400 (malformed JSON) and 413 (body too large) count too.
   */
  it('tollgate_requests_total counts chat requests answered 401, 400 (malformed JSON) and 413', async () => {
    const acct = await gw.account(10);
    const post = (init: Parameters<TestGateway['fetch']>[1]) => gw.fetch('/api/v1/chat/completions', init);
    expect((await post({ token: 'sk-tg-v1-not-a-key', body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } })).status).toBe(401);
    expect((await post({ token: acct.key, rawBody: '{', headers: { 'content-type': 'application/json' } })).status).toBe(400);
    expect((await post({ token: acct.key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'x'.repeat(20_000) }] } })).status).toBe(413);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const text = await (await gw.fetch('/metrics', { token: ADMIN_TOKEN })).text();
    const statuses = text
      .split('\n')
      .filter((l) => l.startsWith('tollgate_requests_total{'))
      .map((l) => /status="(\d+)"/.exec(l)?.[1]);
    expect(statuses).toEqual(expect.arrayContaining(['401', '400', '413']));
  });
});
