import { describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// JSON.parse reads any depth of nesting; JSON.stringify recurses, and throws a RangeError past a
// few thousand levels. The gateway re-serialises parts of a body it parsed fine: the prompt-side
// fields for the estimate (promptSideText: tools, response_format; promptTokenBound and
// countPromptTokens: a message's tool_calls), and a whole answer it has to rebuild
// (normalizeAnswer). Such a client's body is a 400 naming the field (CONTRACT §6), never a 500; such an
// upstream answer is a 502, and not charged (it was not delivered).

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('deeply nested JSON', () => {
  const up = new ScriptedUpstream();
  const setup = gatewayOn(up, { id: 'u/m', upstreamModel: 'm', prompt: '0.001', completion: '0.001', contextLength: 100_000 });

  const send = async (rawBody: string) => {
    const acct = await setup.gw.account(100);
    const res = await setup.gw.fetch('/api/v1/chat/completions', { token: acct.key, rawBody, headers: { 'content-type': 'application/json' } });
    return { status: res.status, text: await res.text(), key: acct.key };
  };

  it('a request whose tools nest 20,000 levels deep is not a 500', async () => {
    up.script({ kind: 'json', body: upstreamAnswer(1) });
    const r = await send(`{"model":"u/m","messages":[{"role":"user","content":"hi"}],"tools":${deep(20_000)}}`);
    expect(r.status, r.text).toBeLessThan(500);
  });

  it("a request whose message's tool_calls nest 20,000 levels deep is not a 500", async () => {
    up.script({ kind: 'json', body: upstreamAnswer(1) });
    const r = await send(`{"model":"u/m","messages":[{"role":"assistant","content":"x","tool_calls":${deep(20_000)}},{"role":"user","content":"hi"}]}`);
    expect(r.status, r.text).toBeLessThan(500);
  });

  it('an upstream answer the gateway must rebuild is delivered, or else not charged', async () => {
    // `tool_calls: null` makes the gateway rebuild the answer (OpenRouter's schema allows only absence).
    const head = JSON.stringify({
      id: 'x',
      object: 'chat.completion',
      created: 1,
      model: 'm',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok', tool_calls: null }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
    });
    up.script({ kind: 'text', status: 200, headers: { 'content-type': 'application/json' }, body: `${head.slice(0, -1)},"metadata":${deep(20_000)}}` });
    const r = await send('{"model":"u/m","messages":[{"role":"user","content":"hi"}]}');
    const usage = ((await (await setup.gw.fetch('/api/v1/credits', { token: r.key })).json()) as { data: { total_usage: number } }).data.total_usage;
    expect(r.status === 200 || usage === 0, `status ${r.status}, charged ${usage}`).toBe(true);
  });
});
