import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { contentOf, readSse } from './helpers/sse.js';

// An upstream that sends a long answer all at once (a buffered provider, or one replaying a cache):
// hundreds of chunks of the chunked encoding land in one read. The gateway reads 256 of them, pauses
// the body for backpressure, and resuming it hands over the rest and the body's end at once. Every
// event reaches the client, in order, and the answer closes with its usage and [DONE].
const chunk = (content: string) =>
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const usage = (events: number) =>
  JSON.stringify({
    id: 'u',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: events, total_tokens: 5 + events },
  });

describe('a long answer that arrives in one burst', () => {
  let upstream: Server;
  let gw: TestGateway;

  beforeAll(async () => {
    // The client's max_tokens says how many events the upstream sends.
    upstream = createServer((req, res) => {
      let text = '';
      req.on('data', (d: Buffer) => (text += d.toString()));
      req.on('end', () => {
        const events = (JSON.parse(text) as { max_tokens: number }).max_tokens;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        // Written in one turn: each write is its own chunk, and they reach the gateway together.
        for (let i = 0; i < events; i++) res.write(`data: ${chunk(`w${i} `)}\n\n`);
        res.write(`data: ${usage(events)}\n\n`);
        res.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      providers: [{ id: 'acme', type: 'openai', base_url: base, api_key: 'sk-acme-0123456789' }],
      models: [{ id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small', pricing: { prompt: '0.000001', completion: '0.000001' } }] }],
    });
  });

  afterAll(async () => {
    await gw?.close();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  // 255 and 256 events: the usage chunk is the 256th read, at which the body pauses, with [DONE] and the
  // end behind it; 400 and 1,000: more behind it than the pause let through.
  for (const events of [255, 256, 400, 1000]) {
    it(`${events} events: reach the client whole, in order, with usage and [DONE], charged once each`, async () => {
      const { key, id } = await gw.account(10);
      for (let round = 0; round < 3; round++) {
        const res = await gw.fetch('/api/v1/chat/completions', {
          token: key,
          body: { model: 'acme/small', stream: true, max_tokens: events, messages: [{ role: 'user', content: 'hi' }] },
        });
        expect(res.status).toBe(200);
        const got = await readSse(res);
        expect(contentOf(got)).toBe(Array.from({ length: events }, (_, i) => `w${i} `).join(''));
        expect(got.at(-1)).toBe('[DONE]');
        expect((got.at(-2) as { usage?: { completion_tokens?: number } }).usage?.completion_tokens).toBe(events);
      }
      // Each answer: 5 prompt and `events` completion tokens at 0.000001 credits each, charged once.
      expect((await gw.admin.getAccount(id)).total_usage).toBe((3 * (5 + events)) / 1_000_000);
    });
  }
});
