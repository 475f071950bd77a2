import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { requestLogLine } from './helpers/log-lines.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §10: "the log line of a refused or failed request names its request id, key label, account,
 * model, status, `limit_source` or limit, and the providers tried."
 *
 * A stream whose upstream fails after output (the client gets the §6 error event) is a failed request:
 * its log line (status 200, the head went out before) carries `error` and the `providers` entry saying
 * how the provider failed, as the line of a 502 does.
 */
describe('the log line of a stream that failed midway says it failed and how', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 12));
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const url = await upstream.start();
    gw = await startTestGateway(
      {
        providers: [{ id: 'a', type: 'openai', base_url: url }],
        models: [{ id: 't/m', endpoints: [{ provider: 'a', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  it('upstream cut after the first chunk: the client gets the error event; the log line names the failure', async () => {
    const acct = await gw.account(5);
    const chunk = (c: string) =>
      JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content: c }, finish_reason: null }] });
    upstream.script({ kind: 'sse', events: [chunk('hello'), chunk(' world')], destroyAfter: 1 });
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      headers: { 'x-request-id': 'mid-stream-failure' },
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const text = await res.text();
    expect(text).toContain('"finish_reason":"error"');
    const line = await requestLogLine(gw.log, 'mid-stream-failure');
    expect(line).toMatchObject({ status: 200, provider: 'a' });
    // What every other failed request's line carries (whyFailed): the error, and the providers tried with how each failed.
    expect(line?.error).toBeDefined();
    expect(line?.providers).toEqual([expect.objectContaining({ provider: 'a', outcome: 'network' })]);
  });
});
