import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

const chat = (gw: TestGateway, token: string | undefined, body: unknown) => gw.fetch('/api/v1/chat/completions', { ...(token ? { token } : {}), body });
const hi = [{ role: 'user', content: 'hi' }];

async function expectError(res: Response, status: number, message: RegExp) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: { code: number; message: string } };
  expect(body.error.code).toBe(status);
  expect(body.error.message).toMatch(message);
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.(js|ts):\d+/); // never a stack trace
  return body;
}

describe('error answers', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 12));
  let gw: TestGateway;
  let key: string;

  beforeAll(async () => {
    gw = await startTestGateway({ listen: { host: '127.0.0.1', port: 0, body_limit_mb: 0.01 } }, clock);
    ({ key } = await gw.account(10));
  });
  afterAll(() => gw.close());

  it('400 for malformed JSON', async () => {
    await expectError(
      await gw.fetch('/api/v1/chat/completions', { token: key, rawBody: '{"model": "demo/echo", ', headers: { 'content-type': 'application/json' } }),
      400,
      /malformed JSON/,
    );
  });

  it('400 for a body that is not an object', async () => {
    await expectError(await chat(gw, key, [1, 2]), 400, /JSON object/);
  });

  it('400 for wrong field types, naming the field', async () => {
    await expectError(await chat(gw, key, { model: 'demo/echo', messages: 'hello' }), 400, /^messages: /);
    await expectError(await chat(gw, key, { model: 42, messages: hi }), 400, /^model: /);
    await expectError(await chat(gw, key, { model: 'demo/echo', messages: hi, stream: 'yes' }), 400, /^stream: /);
  });

  it('400 for negative, fractional or absurd max_tokens', async () => {
    await expectError(await chat(gw, key, { model: 'demo/echo', messages: hi, max_tokens: -5 }), 400, /^max_tokens: must be at least 1/);
    await expectError(await chat(gw, key, { model: 'demo/echo', messages: hi, max_tokens: 1.5 }), 400, /^max_tokens: must be a whole number/);
    await expectError(await chat(gw, key, { model: 'demo/echo', messages: hi, max_tokens: 1e12 }), 400, /^max_tokens: must be at most/);
    // Above the model's context length is not malformed: it is estimated (and held) like any cap.
    expect((await chat(gw, key, { model: 'demo/echo', messages: hi, max_tokens: 100000 })).status).toBe(200);
  });

  it('400 for an unknown model, naming it', async () => {
    const body = await expectError(await chat(gw, key, { model: 'nope/model', messages: hi }), 400, /unknown model "nope\/model"/);
    expect(body).toMatchObject({ error: { metadata: { model: 'nope/model' } } });
    await expectError(await chat(gw, key, { model: 'demo/echo', models: ['demo/echo', 'also/missing'], messages: hi }), 400, /also\/missing/);
  });

  it('401 for a missing, unknown, disabled or expired key', async () => {
    await expectError(await chat(gw, undefined, { model: 'demo/echo', messages: hi }), 401, /missing API key/);
    await expectError(await chat(gw, 'sk-tg-v1-not-a-real-key', { model: 'demo/echo', messages: hi }), 401, /invalid API key/);
    const disabled = await gw.account(10);
    await gw.admin.patchKey(disabled.hash, { disabled: true });
    await expectError(await chat(gw, disabled.key, { model: 'demo/echo', messages: hi }), 401, /disabled/);
    await expectError(await gw.fetch('/api/v1/key', { token: disabled.key }), 401, /disabled/);
    // Again, the key now cached: refused at once in the route's key check (no promise), the same 401.
    await expectError(await chat(gw, disabled.key, { model: 'demo/echo', messages: hi }), 401, /disabled/);
    const expiring = await gw.account(10, { expires_at: new Date(clock.now() + 60_000).toISOString() });
    expect((await chat(gw, expiring.key, { model: 'demo/echo', messages: hi })).status).toBe(200);
    clock.advance(60_000);
    await expectError(await chat(gw, expiring.key, { model: 'demo/echo', messages: hi }), 401, /expired/);
  });

  it('401 on admin routes for a missing or wrong token, and for an API key', async () => {
    await expectError(await gw.fetch('/api/v1/admin/accounts', { body: { name: 'x' } }), 401, /admin/);
    await expectError(await gw.fetch('/api/v1/admin/accounts', { body: { name: 'x' }, token: 'wrong' }), 401, /admin/);
    await expectError(await gw.fetch('/api/v1/admin/accounts', { body: { name: 'x' }, token: key }), 401, /admin/);
    expect((await gw.fetch('/api/v1/admin/accounts', { body: { name: 'x' }, token: ADMIN_TOKEN })).status).toBe(201);
  });

  it('checks the key before reading the body: a bad key is 401 whatever the body', async () => {
    await expectError(
      await gw.fetch('/api/v1/chat/completions', { token: 'sk-tg-v1-bad', rawBody: '{bad', headers: { 'content-type': 'application/json' } }),
      401,
      /invalid API key/,
    );
    await expectError(
      await chat(gw, 'sk-tg-v1-bad', { model: 'demo/echo', messages: [{ role: 'user', content: 'x'.repeat(20_000) }] }),
      401,
      /invalid API key/,
    );
  });

  it('413 for a body over listen.body_limit_mb', async () => {
    const big = 'x'.repeat(20_000);
    await expectError(await chat(gw, key, { model: 'demo/echo', messages: [{ role: 'user', content: big }] }), 413, /larger than the limit/);
  });

  it('reads the body as JSON whatever its Content-Type, and says so when it is not JSON', async () => {
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    await expectError(await gw.fetch('/api/v1/chat/completions', { token: key, rawBody: 'model=x', headers: form }), 400, /malformed JSON/);
    const ok = await gw.fetch('/api/v1/chat/completions', { token: key, rawBody: JSON.stringify({ model: 'demo/echo', messages: hi }), headers: form });
    expect(ok.status).toBe(200);
  });

  it('serves a body with a prototype key, plain or escaped, leaving the key out of what it reads (no object gains a property)', async () => {
    // A JSON schema in response_format may name such a property: the body is valid JSON, and is served.
    const body = JSON.stringify({ model: 'demo/echo', messages: hi });
    for (const name of ['"__proto__"', String.raw`"\u005f_proto__"`, '"constructor"']) {
      const poisoned = `${body.slice(0, -1)},${name}:{"prototype":{"admin":true},"admin":true}}`;
      const res = await gw.fetch('/api/v1/chat/completions', { token: key, rawBody: poisoned });
      expect(res.status, name).toBe(200);
      expect(({} as Record<string, unknown>).admin).toBeUndefined();
      expect((Object.prototype as Record<string, unknown>).admin).toBeUndefined();
    }
  });

  it('the contract body for a malformed URL, an empty body on DELETE, and a control character in a BYOK key', async () => {
    await expectError(await gw.fetch('/api/v1/admin/accounts/%E0%A4%A', { token: ADMIN_TOKEN }), 400, /./);
    const acct = await gw.account(1);
    const del = await gw.fetch(`/api/v1/admin/keys/${acct.hash}`, { method: 'DELETE', token: ADMIN_TOKEN, headers: { 'content-type': 'application/json' } });
    expect(await del.json()).toEqual({ deleted: true });
    const put = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/byok/demo`, { method: 'PUT', token: ADMIN_TOKEN, body: { api_key: 'abc\r\nX-Evil: 1' } });
    await expectError(put, 400, /^api_key: must be printable ASCII/);
    const big = await gw.fetch(`/api/v1/admin/accounts/${acct.id}/credits`, { token: ADMIN_TOKEN, body: { amount: 1_000_000_000 } });
    expect(big.status).toBe(200);
    for (let i = 0; i < 8; i++) await gw.fetch(`/api/v1/admin/accounts/${acct.id}/credits`, { token: ADMIN_TOKEN, body: { amount: 1_000_000_000 } });
    await expectError(
      await gw.fetch(`/api/v1/admin/accounts/${acct.id}/credits`, { token: ADMIN_TOKEN, body: { amount: 1_000_000_000 } }),
      400,
      /may not pass 9000000000 credits/,
    );
  });

  it('404 with the error body for an unknown route', async () => {
    await expectError(await gw.fetch('/api/v1/nothing-here'), 404, /no route/);
  });
});

describe('502 when every provider fails', () => {
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
            { provider: 'alpha', model: 'm', pricing: { prompt: '0.000001', completion: '0.000001' } },
            { provider: 'beta', model: 'm', pricing: { prompt: '0.000001', completion: '0.000001' } },
          ],
        },
      ],
    });
  });
  afterAll(async () => {
    await gw.close();
    await Promise.all([a.stop(), b.stop()]);
  });

  it('tries each endpoint in order, then answers 502 naming the failures, and charges nothing', async () => {
    a.script({ kind: 'json', status: 500, body: { error: { message: 'alpha exploded' } } });
    b.script({ kind: 'destroy' });
    const acct = await gw.account(5);
    const before = a.received.length + b.received.length;
    const res = await chat(gw, acct.key, { model: 'x/model', messages: hi });
    const body = await expectError(res, 502, /every provider failed/);
    expect(a.received.length + b.received.length - before).toBe(2);
    expect(body).toMatchObject({ error: { metadata: { attempts: [{ provider: 'alpha', status: 500 }, { provider: 'beta' }] } } });
    const account = await gw.admin.getAccount(acct.id);
    expect(account.balance).toBe(5);
    expect(account.total_usage).toBe(0);
  });

  it('falls back to the next endpoint when the first fails before any output', async () => {
    a.script({ kind: 'json', status: 503, body: { error: { message: 'busy' } } });
    b.script({
      kind: 'json',
      body: {
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'from beta' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      },
    });
    const acct = await gw.account(5);
    const res = await chat(gw, acct.key, { model: 'x/model', messages: hi });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { provider: string; usage: { cost: number }; choices: Array<{ message: { content: string } }> };
    expect(body.provider).toBe('beta');
    expect(body.choices[0]?.message.content).toBe('from beta');
    expect(body.usage.cost).toBe(0.000015);
  });

  it('falls back when a stream fails after a role-only first chunk, before any output, and charges nothing', async () => {
    const role = JSON.stringify({
      id: 'u',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
    });
    a.script({ kind: 'sse', events: [role, role], destroyAfter: 1 });
    b.script({ kind: 'sse', events: [], done: true });
    const acct = await gw.account(5);
    const res = await chat(gw, acct.key, { model: 'x/model', stream: true, messages: hi });
    await expectError(res, 502, /every provider failed.*ended before any output/);
    expect((await gw.admin.getAccount(acct.id)).total_usage).toBe(0);
  });

  it('never relays the key it sent when an upstream echoes it in an error', async () => {
    a.script({ kind: 'json', status: 401, body: { error: { message: 'Incorrect API key provided: sk-alpha-SECRET-123', code: 'invalid_api_key' } } });
    b.script({ kind: 'json', status: 500, body: { error: { message: 'key sk-beta-SECRET-456 over quota' } } });
    const acct = await gw.account(5);
    const res = await chat(gw, acct.key, { model: 'x/model', messages: hi });
    const text = await res.text();
    expect(res.status).toBe(502);
    expect(text).not.toContain('sk-alpha-SECRET-123');
    expect(text).not.toContain('sk-beta-SECRET-456');
    expect(text).toContain('refused the credentials');
    expect(gw.log.text).not.toContain('SECRET');
  });

  it('honours provider.order, only and ignore', async () => {
    const ok = (who: string) => ({
      kind: 'json' as const,
      body: {
        id: 'x',
        object: 'chat.completion',
        created: 1,
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: who }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    });
    a.script(ok('alpha'));
    b.script(ok('beta'));
    const acct = await gw.account(5);
    const served = async (provider: unknown) => {
      const res = await chat(gw, acct.key, { model: 'x/model', messages: hi, provider });
      return ((await res.json()) as { provider: string }).provider;
    };
    expect(await served(undefined)).toBe('alpha');
    expect(await served({ order: ['beta', 'alpha'] })).toBe('beta');
    expect(await served({ only: ['beta'] })).toBe('beta');
    expect(await served({ ignore: ['alpha'] })).toBe('beta');
    const none = await chat(gw, acct.key, { model: 'x/model', messages: hi, provider: { only: ['gamma'] } });
    await expectError(none, 400, /provider preferences/);
  });
});
