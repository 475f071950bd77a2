import { describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { gatewayOn } from './helpers/gateway-on.js';

// Bodies that OpenAI's and OpenRouter's own APIs accept, refused by the gateway with a 400.

/** An upstream that records the raw text of each request. */
describe('valid request bodies are served', () => {
  const up = new ScriptedUpstream().script({ kind: 'json', body: upstreamAnswer(1) });
  const setup = gatewayOn(up, { id: 'u/m', upstreamModel: 'm', prompt: '0.000001', completion: '0.000002', contextLength: 100_000 });

  const send = async (rawBody: string) => {
    const acct = await setup.gw.account(10);
    const res = await setup.gw.fetch('/api/v1/chat/completions', { token: acct.key, rawBody, headers: { 'content-type': 'application/json' } });
    return { status: res.status, text: await res.text() };
  };

  // OpenAI's API reference: `stream` is "boolean or null, optional, defaults to false".
  it('"stream": null is a non-streamed request', async () => {
    const r = await send('{"model":"u/m","stream":null,"messages":[{"role":"user","content":"hi"}]}');
    expect(r.status, r.text).toBe(200);
  });

  // OpenRouter's SDK (ChatRequest: `provider: z.nullable(ProviderPreferences).optional()`) sends it.
  it('"provider": null is no provider preference', async () => {
    const r = await send('{"model":"u/m","provider":null,"messages":[{"role":"user","content":"hi"}]}');
    expect(r.status, r.text).toBe(200);
  });

  // A structured-output schema with a property named "__proto__" is valid JSON and a valid JSON
  // Schema; the body is relayed as text, so the key never reaches an object's prototype.
  it('a response_format schema with a "__proto__" property is relayed as sent, not refused as "malformed JSON"', async () => {
    const schema = '{"type":"object","properties":{"__proto__":{"type":"string"},"name":{"type":"string"}}}';
    const r = await send(
      `{"model":"u/m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"obj","schema":${schema}}}}`,
    );
    expect(r.status, r.text).toBe(200);
    expect(up.received.at(-1)?.text).toContain(schema);
  });
});
