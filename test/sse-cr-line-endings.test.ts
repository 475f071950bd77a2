import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { contentOf, readSse } from './helpers/sse.js';

// SSE allows a lone CR as a line ending. The parser holds back a CR that ends a read (it may be half of
// a CR LF): when the body ends, that CR still ends the last line, so an upstream that ends its events
// with "\r\r" and closes the body has its last event relayed and charged (its text, finish reason and
// usage), not dropped.

class RawUpstream {
  parts: string[] = [];
  private server: Server | undefined;
  async start(): Promise<string> {
    this.server = createServer(async (req, res) => {
      for await (const _ of req);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const p of this.parts) await new Promise<void>((r) => res.write(p, () => r()));
      res.end();
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}/v1`;
  }
  stop(): Promise<void> {
    return new Promise((r) => this.server?.close(() => r()));
  }
}

const chunk = (delta: Record<string, unknown>, finish: string | null, extra = '') =>
  `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":${JSON.stringify(delta)},"finish_reason":${JSON.stringify(finish)}}]${extra}}`;

describe('an upstream that ends its lines with a lone CR', () => {
  const upstream = new RawUpstream();
  let gw: TestGateway;
  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 't/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  it('relays and charges the last event, which a "\\r\\r" ends before the body does', async () => {
    upstream.parts = [
      `data: ${chunk({ content: 'καλη' }, null)}\r\r`,
      `data: ${chunk({ content: 'μέρα' }, null)}\r\r`,
      // The last event: text, finish reason and the upstream's usage. No [DONE] (the body's end ends the stream).
      `data: ${chunk({ content: '!' }, 'stop', ',"usage":{"prompt_tokens":11,"completion_tokens":42,"total_tokens":53}')}\r\r`,
    ];
    const acct = await gw.account(10);
    const res = await gw.fetch('/api/v1/chat/completions', {
      token: acct.key,
      body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] },
    });
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const gen = await gw.ledger.getGeneration(res.headers.get('x-generation-id') as string);
    expect({ content: contentOf(events), finish: gen?.finishReason, completion: gen?.tokensCompletion, prompt: gen?.tokensPrompt }).toEqual({
      content: 'καλημέρα!',
      finish: 'stop',
      completion: 42,
      prompt: 11,
    });
  });
});
