import fc from 'fast-check';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { isMediaType } from '../src/http/request-body.js';
import { requestLogLine } from './helpers/log-lines.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

/**
 * The chat route is served on node:http before Fastify sees the request (app.ts, routes/chat-completions.ts),
 * every other route by Fastify. A client cannot tell them apart: the chat route's refusals of a body,
 * its CORS headers, its request ids and the address its DDoS guard counts are those of the framework's
 * routes, compared here on the same gateway, request for request.
 */

const CHAT = '/api/v1/chat/completions';
const ACCOUNTS = '/api/v1/admin/accounts';
const hello = { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] };

/** Fastify's own reading of a Content-Type (the oracle isMediaType follows). */
const FastifyContentType = createRequire(import.meta.url)('fastify/lib/content-type.js') as { from(h: string): { isValid: boolean } };

describe('isMediaType reads a Content-Type as Fastify does', () => {
  const token = fc.stringMatching(/^[\w!#$%&'*+.^`|~-]{1,8}$/);
  const anyPart = fc.oneof(token, fc.string({ maxLength: 8 }), fc.constantFrom(' ', '', '/', ';', 'a b', '"', '\t'));
  const header = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.tuple(anyPart, fc.constantFrom('/', ' /', '/ ', ''), anyPart, fc.constantFrom('', ';', '; charset=utf-8', ';x', ' ;a=1')).map((p) => p.join('')),
  );
  it('agrees on every header', () => {
    fc.assert(
      fc.property(header, (h) => {
        expect(isMediaType(h)).toBe(FastifyContentType.from(h).isValid);
      }),
      { numRuns: 2000 },
    );
  });
  it('takes the usual ones and refuses the malformed ones', () => {
    for (const h of ['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded'])
      expect(isMediaType(h)).toBe(true);
    for (const h of ['', 'json', 'application/', '/json', 'application/json x', 'a b/c']) expect(isMediaType(h)).toBe(false);
  });
});

describe('the chat route refuses a body as the framework routes do', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startTestGateway({ listen: { host: '127.0.0.1', port: 0, body_limit_mb: 0.01 } });
    key = (await gw.account(10)).key;
  });
  afterAll(() => gw.close());

  /** The same request to the chat route (with a key) and to an admin route (with the admin token): status and body. */
  async function both(init: { rawBody?: string; headers?: Record<string, string>; body?: unknown }) {
    const answer = async (path: string, token: string) => {
      const res = await gw.fetch(path, { method: 'POST', token, ...init });
      return { status: res.status, body: (await res.json()) as unknown, requestId: res.headers.get('x-request-id') };
    };
    return { chat: await answer(CHAT, key), framework: await answer(ACCOUNTS, ADMIN_TOKEN) };
  }

  it.each([
    ['a malformed Content-Type', { rawBody: '{}', headers: { 'content-type': 'not a type' } }, 415],
    ['malformed JSON under a form type', { rawBody: '{"model": ', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 400],
    ['a body over the limit', { body: { name: 'x'.repeat(20_000) } }, 413],
    [
      'a body over the limit, with a charset',
      { rawBody: JSON.stringify({ name: 'x'.repeat(20_000) }), headers: { 'content-type': 'text/plain; charset=utf-8' } },
      413,
    ],
  ])('%s: the same status and body', async (_what, init, status) => {
    const { chat, framework } = await both(init);
    expect(chat.status).toBe(status);
    expect(chat.body).toEqual(framework.body);
    expect(framework.status).toBe(status);
    expect(chat.requestId).toMatch(/^req-/);
  });

  it('a body over the limit sent without a Content-Length (chunked) is refused too, and logged with its key', async () => {
    const body = new ReadableStream({
      start(c) {
        for (let i = 0; i < 4; i++) c.enqueue(new TextEncoder().encode('x'.repeat(4_000)));
        c.close();
      },
    });
    const res = await fetch(gw.base + CHAT, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-request-id': 'chunked-too-big' },
      body,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(413);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/larger than the limit/);
    expect(await requestLogLine(gw.log, 'chunked-too-big')).toMatchObject({ status: 413, path: CHAT, account: expect.any(String) });
  });

  it('a body with a byte-order mark is served, as JSON without it', async () => {
    const res = await gw.fetch(CHAT, { token: key, rawBody: `\ufeff${JSON.stringify(hello)}`, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { object: string }).object).toBe('chat.completion');
  });

  it('a query string is the same route; another path or method is the framework 404', async () => {
    expect((await gw.fetch(`${CHAT}?x=1`, { token: key, body: hello })).status).toBe(200);
    for (const [path, method] of [
      [`${CHAT}/`, 'POST'],
      [CHAT, 'GET'],
      ['/api/v1/chat/Completions', 'POST'],
    ] as const) {
      const res = await gw.fetch(path, { token: key, method, ...(method === 'POST' ? { body: hello } : {}) });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe(`no route for ${method} ${path}`);
    }
  });

  it('a NUL character in the query is refused past the DDoS guard, as on the framework routes', async () => {
    const chat = await gw.fetch(`${CHAT}?x=%00`, { token: key, body: hello });
    const framework = await gw.fetch('/api/v1/key?x=%00', { token: key });
    expect(chat.status).toBe(400);
    expect(await chat.json()).toEqual(await framework.json());
  });

  it("keeps a client's well-formed request id and replaces a malformed one, as the framework does", async () => {
    for (const [sent, kept] of [
      ['client-id-1', true],
      ['has spaces', false],
    ] as const) {
      const chat = await gw.fetch(CHAT, { token: key, body: hello, headers: { 'x-request-id': sent } });
      const framework = await gw.fetch('/api/v1/key', { token: key, headers: { 'x-request-id': sent } });
      for (const res of [chat, framework]) expect(res.headers.get('x-request-id') === sent).toBe(kept);
      await chat.text();
    }
  });
});

describe('the chat route sets the CORS headers the framework routes set', () => {
  const corsOf = (res: Response) => ({
    origin: res.headers.get('access-control-allow-origin'),
    exposed: res.headers.get('access-control-expose-headers'),
    vary: res.headers.get('vary'),
  });
  it.each([[['https://app.example.com']], [['*']], [['https://a.example.com', 'https://app.example.com']]])('with cors_origins %j', async (origins) => {
    const gw = await startTestGateway({ listen: { host: '127.0.0.1', port: 0, cors_origins: origins } });
    try {
      const { key } = await gw.account(10);
      for (const origin of ['https://app.example.com', 'https://evil.example.net', undefined]) {
        const headers: Record<string, string> = origin ? { origin } : {};
        const chat = await gw.fetch(CHAT, { token: key, body: hello, headers });
        const framework = await gw.fetch('/api/v1/key', { token: key, headers });
        expect(corsOf(chat)).toEqual(corsOf(framework));
        // A refusal (a bad key) carries them too, on both.
        const refusedChat = await gw.fetch(CHAT, { token: 'sk-tg-v1-nope', body: hello, headers });
        const refused = await gw.fetch('/api/v1/key', { token: 'sk-tg-v1-nope', headers });
        expect(refusedChat.status).toBe(401);
        expect(corsOf(refusedChat)).toEqual(corsOf(refused));
        await Promise.all([chat.text(), framework.text(), refusedChat.text(), refused.text()]);
      }
    } finally {
      await gw.close();
    }
  });
});

describe("the chat route's DDoS guard counts the address the framework reads", () => {
  it.each([
    [true, 'counts each X-Forwarded-For client apart'],
    [false, 'ignores X-Forwarded-For and counts the connection'],
  ])('trust_proxy %s: %s', async (trust) => {
    const gw = await startTestGateway({
      listen: { host: '127.0.0.1', port: 0, trust_proxy: trust },
      limits: { ddos: { per_ip_per_second: 2 } },
    });
    try {
      const { key } = await gw.account(10);
      const post = (client: string) => gw.fetch(CHAT, { token: key, body: hello, headers: { 'x-forwarded-for': `${client}, 10.0.0.1` } });
      const statuses = [];
      for (const client of ['203.0.113.1', '203.0.113.1', '203.0.113.1', '203.0.113.2']) statuses.push((await post(client)).status);
      // The clock is the test's and stands still: all four fall in one second.
      expect(statuses).toEqual(trust ? [200, 200, 429, 200] : [200, 200, 429, 429]);
    } finally {
      await gw.close();
    }
  });
});

describe('the chat route, when something fails that no path of it answers (a bug)', () => {
  /** A clock whose scheduling fails once, for the request deadline only (DEADLINE_MS, which nothing else asks for). */
  const DEADLINE_MS = 123_457;
  class DeadlineFailingClock extends ManualClock {
    failDeadline = false;
    override schedule(delayMs: number, fn: () => void) {
      if (this.failDeadline && delayMs === DEADLINE_MS) {
        this.failDeadline = false;
        throw new Error('the clock could not schedule (injected)');
      }
      return super.schedule(delayMs, fn);
    }
  }

  it('answers 500 with an error body and no details, logs the error with the request id, and goes on serving', async () => {
    const clock = new DeadlineFailingClock(Date.now());
    const gw = await startTestGateway({ limits: { request_deadline_ms: DEADLINE_MS } }, clock);
    try {
      const { key } = await gw.account(10);
      clock.failDeadline = true;
      const res = await gw.fetch(CHAT, { token: key, body: hello, headers: { 'x-request-id': 'broke-1' } });
      expect(res.status).toBe(500);
      expect(res.headers.get('x-request-id')).toBe('broke-1');
      const text = await res.text();
      expect(JSON.parse(text)).toEqual({ error: { code: 500, message: 'internal error; the details are in the gateway log' } });
      expect(text).not.toContain('injected');
      expect(await requestLogLine(gw.log, 'broke-1')).toMatchObject({ status: 500, path: CHAT });
      expect(gw.log.text.split('\n').some((l) => l.includes('unexpected error') && l.includes('injected') && l.includes('broke-1'))).toBe(true);
      // The process is still up, and the next request is served.
      expect((await gw.fetch(CHAT, { token: key, body: hello })).status).toBe(200);
    } finally {
      await gw.close();
    }
  });
});
