import { createServer, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

// The route takes the reply over (hijack) for a stream, then writes its head (writeSse). Should that
// write throw (fault injection: writeHead throws once for the SSE head, as for an invalid header value),
// Fastify answers nothing: the route must still settle the request, cancel the upstream call and
// answer the client.

const chunk = (content: string) =>
  JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a stream whose head fails to be written', () => {
  let upstream: Server;
  let gw: TestGateway;
  let upstreamClosed = false;

  beforeAll(async () => {
    // Sends one chunk and keeps the stream open (a long answer under way).
    upstream = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${chunk('hello ')}\n\n`);
        res.on('close', () => (upstreamClosed = true));
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
    gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 't/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
  });
  afterAll(async () => {
    upstream.closeAllConnections();
    await gw.close();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });

  it('settles the request, cancels the upstream stream and ends the client response', async () => {
    const acct = await gw.account(1);
    const real = ServerResponse.prototype.writeHead;
    const spy = vi.spyOn(ServerResponse.prototype, 'writeHead').mockImplementation(function (this: ServerResponse, ...args: unknown[]) {
      const headers = args[1] as Record<string, string> | undefined;
      if (headers?.['x-generation-id'] !== undefined && headers['content-type']?.startsWith('text/event-stream')) {
        spy.mockRestore();
        throw new TypeError('Invalid character in header content ["x-example"]');
      }
      return (real as (...a: unknown[]) => ServerResponse).apply(this, args);
    });
    let outcome: string;
    try {
      const answered = gw
        .fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 't/m', stream: true, messages: [{ role: 'user', content: 'hi' }] } })
        .then(
          (r) => r.text().then(() => `answered ${r.status}`),
          (err: unknown) => `failed: ${(err as Error).message}`,
        );
      outcome = await Promise.race([answered, sleep(2_000).then(() => 'no answer within 2 s')]);
    } finally {
      spy.mockRestore();
    }
    await sleep(500);
    // Money: holds released, nothing charged (nothing was delivered).
    const account = await gw.admin.getAccount(acct.id);
    expect(account.total_usage).toBe(0);
    expect(account.in_flight!.held).toBe(0);
    expect(upstreamClosed, 'the upstream stream was cancelled').toBe(true);
    // No head went out: the client gets the error answer (a 500: the gateway's own failure).
    expect(outcome).toBe('answered 500');
  });
});
