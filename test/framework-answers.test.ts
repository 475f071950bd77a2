import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * CONTRACT §6: error body `{"error": {"code": <HTTP status>, "message": "…", "metadata": {…}?}}`.
 * CONTRACT §10: "Every answer carries X-Request-Id".
 *
 * Two answers Fastify would otherwise write itself, in its own shape
 * (`{"error": "<reason phrase>", "message": "…", "statusCode": N}`) and without X-Request-Id:
 * - a request that arrives on an open keep-alive connection once shutdown has begun (SIGTERM runs
 *   gw.close()): 503, and the connection closed;
 * - a request Node's HTTP parser rejects (headers over the 16 KB limit: 431).
 */

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Splits what came back on one connection into its HTTP answers (Content-Length framed). */
function answers(text: string): RawAnswer[] {
  const out: RawAnswer[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(':');
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    const bodyStart = end + 4;
    const body = Buffer.from(rest.slice(bodyStart), 'utf8').subarray(0, length).toString('utf8');
    out.push({ status: Number(statusLine?.split(' ')[1]), headers, body });
    rest = Buffer.from(rest.slice(bodyStart), 'utf8').subarray(length).toString('utf8');
  }
  return out;
}

/** Opens a connection to the gateway, lets `talk` write on it, and answers everything read until it closes. */
function exchange(base: string, talk: (s: Socket) => Promise<void>): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const s = connect(Number(url.port), url.hostname);
    let text = '';
    s.setTimeout(10_000, () => s.destroy(new Error('no end within 10 s')));
    s.on('data', (d) => (text += d.toString('utf8')));
    s.on('close', () => resolve(text));
    s.on('error', reject);
    s.on('connect', () => void talk(s).catch((err: unknown) => s.destroy(err as Error)));
  });
}

function expectContractError(a: RawAnswer | undefined, status: number): void {
  expect(a?.status).toBe(status);
  expect(a?.headers['x-request-id']).toEqual(expect.any(String));
  const body = JSON.parse(a?.body ?? 'null') as { error?: { code?: unknown; message?: unknown } };
  expect(body.error).toEqual(expect.objectContaining({ code: status, message: expect.any(String) }));
}

describe('CONTRACT §6, §10: answers written before any route have the contract body and X-Request-Id', () => {
  const up = new ScriptedUpstream();
  const started: TestGateway[] = [];
  afterAll(async () => {
    for (const gw of started) await gw.close();
    await up.stop();
  });

  it('a request that arrives on an open connection after shutdown began (SIGTERM)', async () => {
    const base = await up.start();
    up.script({ kind: 'json', hold: true, body: upstreamAnswer(5) });
    const gw = await startTestGateway({
      providers: [{ id: 'up', type: 'openai', base_url: base }],
      models: [{ id: 'u/m', endpoints: [{ provider: 'up', model: 'm', pricing: { prompt: '0.000001', completion: '0.000002' } }] }],
    });
    const acct = await gw.account(10);
    const chat = JSON.stringify({ model: 'u/m', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] });
    // Resolves when the second request of the connection reached the server.
    let second!: () => void;
    const secondArrived = new Promise<void>((resolve) => (second = resolve));
    gw.app.server.on('request', (req: IncomingMessage) => {
      if (req.url === '/api/v1/models') second();
    });
    let closed: Promise<void> | undefined;
    const text = await exchange(gw.base, async (s) => {
      s.write(
        `POST /api/v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer ${acct.key}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(chat)}\r\n\r\n${chat}`,
      );
      await up.waitHolding(1); // the first request is running
      closed = gw.close(); // what SIGTERM does
      while (gw.app.server.listening) await new Promise((resolve) => setImmediate(resolve));
      s.write('GET /api/v1/models HTTP/1.1\r\nHost: gw\r\n\r\n');
      await secondArrived;
      up.release();
    });
    await closed;
    const [first, refused] = answers(text);
    expect(first?.status).toBe(200); // the running request finished
    expectContractError(refused, 503);
    expect(refused?.headers.connection).toBe('close');
    expect(refused?.headers['retry-after']).toBe('1');
  });

  it('a request whose headers are over the HTTP parser limit (431)', async () => {
    const gw = await startTestGateway();
    started.push(gw);
    const text = await exchange(gw.base, async (s) => {
      s.write(`GET /api/v1/models HTTP/1.1\r\nHost: gw\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`);
    });
    const [answer] = answers(text);
    expectContractError(answer, 431);
    expect(answer?.headers.connection).toBe('close');
  });
});
