import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// A client that stops reading a stream without going away (its TCP window stays shut) must not keep
// its request from settling for as long as the connection lives: past the request deadline the
// gateway cuts it off, and the request is charged for what it was sent.
const EVENT_TEXT = 'x'.repeat(4096);
const EVENTS = 5000; // ~20 MB: more than the sockets' buffers take, so the gateway's writes back up
const DEADLINE_MS = 60_000;

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('a client that stops reading a stream', () => {
  let upstream: Server;
  let gw: TestGateway;
  let written = 0;
  const clock = new ManualClock(Date.now());

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const chunk = JSON.stringify({
          id: 'u',
          object: 'chat.completion.chunk',
          created: 1,
          model: 'm',
          choices: [{ index: 0, delta: { content: EVENT_TEXT } }],
        });
        const more = () => {
          while (written < EVENTS) {
            written++;
            if (!res.write(`data: ${chunk}\n\n`)) return void res.once('drain', more);
          }
          res.end('data: [DONE]\n\n');
        };
        res.on('close', () => res.off('drain', more));
        more();
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway(
      {
        providers: [{ id: 'acme', type: 'openai', base_url: base, api_key: 'sk-acme-0123456789' }],
        models: [{ id: 'acme/big', endpoints: [{ provider: 'acme', model: 'big', pricing: { prompt: '0.000001', completion: '0.000001' } }] }],
        limits: { request_deadline_ms: DEADLINE_MS },
      },
      clock,
    );
  });

  afterAll(async () => {
    await gw?.close();
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  it('is cut off at the request deadline, and its request is charged for what it was sent', async () => {
    const { key, id } = await gw.account(100);
    const url = new URL(`${gw.base}/api/v1/chat/completions`);
    const body = JSON.stringify({ model: 'acme/big', stream: true, max_tokens: 100_000, messages: [{ role: 'user', content: 'hi' }] });
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    expect(res.statusCode).toBe(200);
    res.pause(); // reads nothing more, and stays connected
    const ended = new Promise<void>((resolve) => {
      res.on('close', resolve);
      res.on('error', () => resolve());
    });
    // Wait until nothing moves: the upstream stopped writing, held back by the gateway, which is held back by the client.
    let still = 0;
    for (let last = -1; still < 500 && written < EVENTS;) {
      await turn();
      if (written === last) still++;
      else [still, last] = [0, written];
    }
    expect(written, 'the stream is held up by the client, not finished').toBeLessThan(EVENTS);
    expect((await gw.admin.getAccount(id)).total_usage).toBe(0);

    clock.advance(DEADLINE_MS + 1);
    let usage = 0;
    for (let i = 0; i < 20_000 && usage === 0; i++) {
      await turn();
      if (i % 100 === 0) usage = (await gw.admin.getAccount(id)).total_usage;
    }
    expect(usage, 'charged once the deadline cut the client off').toBeGreaterThan(0);
    res.destroy();
    await ended;
    const line = gw.log.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; path?: string; client_gone?: boolean })
      .find((l) => l.msg === 'request' && l.path === '/api/v1/chat/completions');
    expect(line).toMatchObject({ client_gone: true });
  });
});
