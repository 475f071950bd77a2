import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamAnswer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// Bodies that OpenAI's and OpenRouter's own APIs accept, refused by the gateway with a 400.

/** An upstream that records the raw text of each request. */
class RawUpstream {
  received: string[] = [];
  private server: Server | undefined;
  async start(): Promise<string> {
    this.server = createServer(async (req, res) => {
      let raw = '';
      for await (const c of req) raw += c;
      this.received.push(raw);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(upstreamAnswer(1)));
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/v1`;
  }
  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => this.server?.close(() => r()));
  }
}

describe('valid request bodies are served', () => {
  const up = new RawUpstream();
  let gw: TestGateway;
  beforeAll(async () => {
    const base = await up.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/m', context_length: 100_000, endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await up.stop();
  });

  const send = async (rawBody: string) => {
    const acct = await gw.account(10);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, rawBody, headers: { 'content-type': 'application/json' } });
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
    expect(up.received.at(-1)).toContain(schema);
  });
});
