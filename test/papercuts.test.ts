import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream, type Script } from './helpers/scripted-upstream.js';
import { startTestGateway, type TestGateway } from './helpers/gateway.js';
import { readSse } from './helpers/sse.js';
import { databaseTargets, type DatabaseTarget } from './helpers/database.js';

const hi = [{ role: 'user', content: 'hi' }];
const price = { prompt: '0.000001', completion: '0.000001' };
const refuse = (status: number, message: string): Script => ({ kind: 'json', status, body: { error: { message, type: 'invalid_request_error' } } });

describe('issue 7 item 10b: an upstream 400/413/422 that every provider gives is answered with that status', () => {
  const a = new ScriptedUpstream();
  const b = new ScriptedUpstream();
  let gw: TestGateway;

  beforeAll(async () => {
    const [ua, ub] = await Promise.all([a.start(), b.start()]);
    gw = await startTestGateway({
      providers: [
        { id: 'alpha', type: 'openai', base_url: ua, api_key: 'sk-alpha-SECRET-123' },
        { id: 'beta', type: 'openai', base_url: ub, api_key: 'sk-beta-SECRET-456' },
      ],
      models: [
        {
          id: 'x/model',
          endpoints: [
            { provider: 'alpha', model: 'm', pricing: price },
            { provider: 'beta', model: 'm', pricing: price },
          ],
        },
      ],
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([a.stop(), b.stop()]);
  });

  const ask = async (stream = false) => {
    const acct = await gw.account(5);
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'x/model', messages: hi, stream } });
    return { res, acct };
  };

  for (const status of [400, 413, 422]) {
    it(`every provider answered ${status}: the answer is ${status} with the provider's scrubbed message, and nothing is charged`, async () => {
      a.script(refuse(status, "Invalid 'temperature' (sent with key sk-alpha-SECRET-123)"));
      b.script(refuse(status, 'Invalid temperature: must be at most 2'));
      const { res, acct } = await ask();
      expect(res.status).toBe(status);
      const body = (await res.json()) as { error: { code: number; message: string; metadata: Record<string, unknown> } };
      expect(body.error.code).toBe(status);
      expect(body.error.message).toMatch(/alpha.*Invalid 'temperature'/);
      expect(body.error.metadata).toMatchObject({ provider_name: 'alpha' });
      expect(JSON.stringify(body)).not.toContain('sk-alpha-SECRET-123');
      const account = await gw.admin.getAccount(acct.id);
      expect(account.total_usage).toBe(0);
    });
  }

  it('a streamed request refused by every provider gets the same status', async () => {
    a.script(refuse(400, 'bad tools'));
    b.script(refuse(400, 'bad tools'));
    const { res } = await ask(true);
    expect(res.status).toBe(400);
  });

  it('providers that refuse with different 4xx statuses: the first provider tried answers', async () => {
    a.script(refuse(422, 'alpha cannot process it'));
    b.script(refuse(400, 'beta says bad request'));
    const { res } = await ask();
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(/alpha cannot process it/);
  });

  it('providers disagree (one refused the request, another failed): 502, since the request itself may be fine', async () => {
    a.script(refuse(400, 'alpha does not like it'));
    b.script({ kind: 'json', status: 502, body: { error: { message: 'bad gateway' } } });
    expect((await ask()).res.status).toBe(502);
  });

  it("a provider's 401 or 403 is the gateway's credentials failing: 502", async () => {
    a.script({ kind: 'json', status: 401, body: { error: { message: 'bad key sk-alpha-SECRET-123' } } });
    b.script({ kind: 'json', status: 403, body: { error: { message: 'forbidden' } } });
    const { res } = await ask();
    expect(res.status).toBe(502);
    expect(await res.text()).not.toContain('sk-alpha-SECRET-123');
  });
});

describe.each(databaseTargets)('issue 7 item 10c: /health/ready checks the ledger ($name)', (target) => {
  let gw: TestGateway;
  let db: Awaited<ReturnType<DatabaseTarget['create']>>;
  beforeAll(async () => {
    db = await target.create();
    gw = await startTestGateway({ database_url: db.url });
  });
  afterAll(async () => {
    await gw.close().catch(() => undefined);
    await db.drop();
  });

  it('is 200 while the ledger answers and 503 once it does not; /health stays liveness', async () => {
    const ready = await gw.fetch('/health/ready');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ok' });
    await gw.ledger.close(); // the database is closed: the ledger no longer answers
    const notReady = await gw.fetch('/health/ready');
    expect(notReady.status).toBe(503);
    const body = (await notReady.json()) as { error: { code: number; message: string; metadata: Record<string, unknown> } };
    expect(body.error.code).toBe(503);
    expect(body.error.metadata).toMatchObject({ reason: 'ledger_unavailable' });
    expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(js|ts):\d+/);
    expect((await gw.fetch('/health')).status).toBe(200);
  });
});

describe('issue 7 item 10e: an openai provider without an api_key is warned about at start', () => {
  it('logs one warning line per such provider, naming its id and never a key', async () => {
    const upstream = new ScriptedUpstream();
    const base = await upstream.start();
    const gw = await startTestGateway({
      providers: [
        { id: 'unset-key', type: 'openai', base_url: base },
        { id: 'empty-key', type: 'openai', base_url: base, api_key: '' },
        { id: 'with-key', type: 'openai', base_url: base, api_key: 'sk-with-key-SECRET-789' },
        { id: 'demo', type: 'demo', token_latency_ms: 0 },
      ],
    });
    await gw.close();
    await upstream.stop();
    const warnings = gw.log.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: number; msg: string; provider?: string })
      .filter((l) => l.level === 40 && /api_key/.test(l.msg));
    expect(warnings.map((w) => w.provider).sort()).toEqual(['empty-key', 'unset-key']);
    for (const w of warnings) expect(w.msg).toContain(w.provider);
    expect(gw.log.text).not.toContain('sk-with-key-SECRET-789');
  });
});

describe('issue 7 item 10f: streamed requests log once', () => {
  it('writes exactly one access-log line per request, streamed or not', async () => {
    const gw = await startTestGateway({}, new ManualClock(Date.UTC(2026, 10, 23, 9)));
    const { key } = await gw.account(10);
    const ask = (stream: boolean) => gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo', max_tokens: 20, stream, messages: hi } });
    const streamed = await ask(true);
    expect(streamed.status).toBe(200);
    expect((await readSse(streamed)).at(-1)).toBe('[DONE]');
    const plain = await ask(false);
    expect(plain.status).toBe(200);
    await plain.json();
    await gw.close(); // every hook has run
    const lines = gw.log.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; path?: string; status?: number; stream?: boolean })
      .filter((l) => l.msg === 'request' && l.path === '/api/v1/chat/completions');
    expect(lines).toHaveLength(2);
    expect(lines.filter((l) => l.stream === true)).toHaveLength(1);
    expect(lines.every((l) => l.status === 200)).toBe(true);
  });

  it('a stream the client leaves early is logged once too, saying so', async () => {
    const upstream = new ScriptedUpstream();
    const base = await upstream.start();
    const chunk = (content: string) =>
      JSON.stringify({ id: 'u', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: { content }, finish_reason: null }] });
    upstream.script({ kind: 'sse', events: [chunk('one'), chunk('two')], holdAfter: 1 });
    const gw = await startTestGateway({
      providers: [{ id: 'acme', type: 'openai', base_url: base, api_key: 'sk-acme-0123456789' }],
      models: [{ id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small', pricing: price }] }],
    });
    const { key } = await gw.account(10);
    const client = new AbortController();
    const res = await fetch(`${gw.base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'acme/small', max_tokens: 20, stream: true, messages: hi }),
      signal: client.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('one')) seen += new TextDecoder().decode((await reader.read()).value);
    await upstream.waitHolding(1);
    client.abort();
    await reader.cancel().catch(() => undefined);
    upstream.release();
    // The server sees the client leave a few event-loop turns later: wait for that (no timer).
    for (let turns = 0; turns < 10_000 && !gw.log.text.includes('client_gone'); turns++) await new Promise((r) => setImmediate(r));
    await gw.close();
    await upstream.stop();
    const lines = gw.log.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; path?: string; stream?: boolean; client_gone?: boolean })
      .filter((l) => l.msg === 'request' && l.path === '/api/v1/chat/completions');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ stream: true, client_gone: true });
  });
});
