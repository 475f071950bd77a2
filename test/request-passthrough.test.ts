import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// "The gateway never changes the client's parameters" (CONTRACT §7, §10). The client's body is
// relayed by splicing its own text (chat-service.ts, upstreamBody), which keeps every number as the
// client wrote it (an integer past 2^53, an int64 `seed`, would come out changed from JSON.parse and
// JSON.stringify), also for a body that starts with a byte-order mark, a body with a key written twice
// at its top level (the last is sent, as the gateway read it), and a request that uses the web plugin
// (its messages written anew, the rest as sent).

/** An upstream that records the raw text of each request. */
// A valid int64 seed above 2^53: JSON.parse reads it as 9007199254740992.
const SEED = '9007199254740993';

describe("the client's parameters reach the upstream as the client wrote them", () => {
  const up = new ScriptedUpstream().script({ kind: 'json', body: upstreamAnswer(1) });
  const search = new ScriptedUpstream();
  let gw: TestGateway;
  beforeAll(async () => {
    const [base, searchBase] = await Promise.all([up.start(), search.start()]);
    search.script({ kind: 'json', body: { results: [{ title: 'T', url: 'https://t.test', text: 'text' }] } });
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
      plugins: { web: { search_url: `${searchBase.replace(/\/v1$/, '')}/search`, price: '0.004', max_results: 1 } },
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([up.stop(), search.stop()]);
  });

  const send = async (rawBody: string) => {
    const acct = await gw.account(10);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, rawBody, headers: { 'content-type': 'application/json' } });
    expect(res.status, await res.text()).toBe(200);
    return up.received.at(-1)?.text ?? '';
  };

  it('a body that starts with a byte-order mark', async () => {
    const sent = await send(`\uFEFF{"model":"u/m","seed":${SEED},"messages":[{"role":"user","content":"hi"}]}`);
    expect(sent).toContain(`"seed":${SEED}`);
  });

  it('a body with a key written twice at its top level', async () => {
    const sent = await send(`{"model":"u/m","seed":${SEED},"user":"a","user":"b","messages":[{"role":"user","content":"hi"}]}`);
    expect(sent).toContain(`"seed":${SEED}`);
  });

  it('a request that uses the web plugin', async () => {
    const sent = await send(`{"model":"u/m","seed":${SEED},"plugins":[{"id":"web"}],"messages":[{"role":"user","content":"hi"}]}`);
    expect(sent).toContain(`"seed":${SEED}`);
  });
});
