import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { parsePrometheus, sample, type Samples } from './helpers/prometheus.js';
import { requestLogLine } from './helpers/log-lines.js';

const paid = { prompt: '0.000001', completion: '0.000002' };

// CONTRACT §10: tollgate_requests_total{model,provider,status}. A non-streamed request whose client
// went away while the upstream was still working was never answered: no status was sent. It is
// counted and logged as 499 (nginx's "client closed request"), not with Node's default statusCode,
// 200, as if it had succeeded.
describe('a request the client abandoned before any answer is not counted as a 200', () => {
  const up = new ScriptedUpstream();
  let gw: TestGateway;
  beforeAll(async () => {
    const base = await up.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: paid }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  const scrape = async (): Promise<Samples> => parsePrometheus(await (await gw.fetch('/metrics', { token: ADMIN_TOKEN })).text());

  it('no 200 is counted or logged for it', async () => {
    const acct = await gw.account(10);
    up.script({ kind: 'hang' });
    const before = await scrape();
    const controller = new AbortController();
    const pending = fetch(`${gw.base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acct.key}`, 'content-type': 'application/json', 'x-request-id': 'abandoned-1' },
      body: JSON.stringify({ model: 'u/m', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] }),
      signal: controller.signal,
    }).catch(() => undefined);
    for (let i = 0; i < 200 && up.received.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(up.received.length).toBe(1);
    controller.abort();
    await pending;
    const line = await requestLogLine(gw.log, 'abandoned-1');
    const after = await scrape();
    expect(sample(after, 'tollgate_requests_total', { status: '200' }) - sample(before, 'tollgate_requests_total', { status: '200' })).toBe(0);
    expect(line.status).not.toBe(200);
  });
});
