import { readFileSync } from 'node:fs';
import { validate } from '@readme/openapi-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { readSse } from './helpers/sse.js';
import { fixtureChunks, fixtureJson, ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { CHAT_COMPLETIONS_PATH } from '../src/http/routes/chat-completions.js';

// GET /api/v1/openapi.json (CONTRACT §10): the document is valid OpenAPI 3.1, it names every route the
// gateway serves, and the answers the gateway actually gives (success and error bodies, public,
// management and admin routes, recorded provider answers) match the schemas it documents for them.

type Json = Record<string, any>;
type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Every method and path Fastify serves, read from its route tree (HEAD and OPTIONS left out). */
function servedRoutes(app: FastifyInstance): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([^)]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] as string).length / 4;
    stack.length = depth;
    stack.push(m[2] as string);
    for (const method of m[3]?.split(', ') ?? []) if (method !== 'HEAD' && method !== 'OPTIONS') out.push(`${method} ${stack.join('')}`);
  }
  return out.sort();
}

const pointer = (...parts: string[]) => parts.map((p) => p.replaceAll('~', '~0').replaceAll('/', '~1')).join('/');

describe('the OpenAPI document', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 12));
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;
  let doc: Json;
  const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  addFormats.default(ajv);
  // The document's own fields are not JSON Schema keywords: answers are checked against schemas inside it.
  for (const keyword of ['openapi', 'info', 'tags', 'paths', 'components']) ajv.addKeyword(keyword);
  /** Operations whose success answer the tests checked, and the error statuses they saw. */
  const checked = new Set<string>();

  const operationOf = (method: Method, path: string): Json => {
    const op = doc.paths[path]?.[method] as Json | undefined;
    if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
    return op;
  };

  /** The JSON pointer of the schema the document gives for `status` of an operation, in `mediaType`. */
  function answerSchemaPointer(method: Method, path: string, status: number, mediaType: string): string {
    const responses = operationOf(method, path).responses as Json;
    let response = responses[String(status)] as Json | undefined;
    let at = pointer('paths', path, method, 'responses', String(status));
    if (!response) throw new Error(`${method.toUpperCase()} ${path} documents no ${status}`);
    if (typeof response.$ref === 'string') {
      at = response.$ref.slice(2);
      response = response.$ref
        .slice(2)
        .split('/')
        .reduce((o: Json, k: string) => o[k.replaceAll('~1', '/').replaceAll('~0', '~')], doc) as Json;
    }
    const media = response.content?.[mediaType] as Json | undefined;
    if (!media) throw new Error(`${method.toUpperCase()} ${path} ${status} documents no ${mediaType} body`);
    return `openapi.json#/${at}/${pointer('content', mediaType, mediaType === 'text/event-stream' ? 'x-itemSchema' : 'schema')}`;
  }

  function expectMatches(ref: string, value: unknown, what: string): void {
    const check = ajv.getSchema(ref) ?? ajv.compile({ $ref: ref });
    if (!check(value))
      throw new Error(`${what} does not match its documented schema:\n${ajv.errorsText(check.errors, { separator: '\n' })}\n${JSON.stringify(value)}`);
  }

  /** Calls the gateway and checks the answer against what the document says of that route and status. */
  async function call(
    method: Method,
    path: string,
    expected: number,
    init: { url?: string; token?: string; body?: unknown; rawBody?: string } = {},
  ): Promise<{ res: Response; body: any }> {
    const op = operationOf(method, path);
    // What the tests send to a route that then succeeds is what its documented request body accepts.
    if (init.body !== undefined && expected < 300) {
      expectMatches(
        `openapi.json#/${pointer('paths', path, method, 'requestBody', 'content', 'application/json', 'schema')}`,
        init.body,
        `the body sent to ${path}`,
      );
    }
    const res = await gw.fetch(init.url ?? path, { method: method.toUpperCase(), token: init.token, body: init.body, rawBody: init.rawBody });
    expect(res.status, `${method.toUpperCase()} ${init.url ?? path}`).toBe(expected);
    const type = res.headers.get('content-type') ?? '';
    let body: any;
    if (res.status === 204) {
      expect((op.responses as Json)['204'].content).toBeUndefined();
      body = await res.text();
      expect(body).toBe('');
    } else if (type.startsWith('text/event-stream')) {
      const ref = answerSchemaPointer(method, path, res.status, 'text/event-stream');
      body = await readSse(res);
      for (const event of body as unknown[]) if (event !== '[DONE]') expectMatches(ref, event, `an event of ${path}`);
    } else if (type.startsWith('text/plain')) {
      answerSchemaPointer(method, path, res.status, 'text/plain');
      body = await res.text();
    } else {
      expect(type).toMatch(/^application\/json/);
      body = await res.json();
      expectMatches(answerSchemaPointer(method, path, res.status, 'application/json'), body, `${res.status} of ${method.toUpperCase()} ${path}`);
    }
    checked.add(`${method} ${path} ${res.status}`);
    return { res, body };
  }

  const admin = (method: Method, path: string, expected: number, init: { url?: string; body?: unknown } = {}) =>
    call(method, path, expected, { ...init, token: ADMIN_TOKEN });

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway(
      {
        listen: { host: '127.0.0.1', port: 0, body_limit_mb: 0.01 },
        limits: { free_models: { per_minute: 1 } },
        metrics: { token: 'metrics-token-0123456789' },
        // A webhook whose receiver refuses connections: the test action answers that it was not delivered.
        alerts: { webhooks: [{ id: 'hook', url: 'http://127.0.0.1:9/none', secret: 'webhook-secret-0123456789' }] },
        providers: [
          { id: 'demo', type: 'demo', token_latency_ms: 0 },
          { id: 'up', type: 'openai', base_url: base, api_key: 'upstream-key' },
        ],
        models: [
          { id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] },
          { id: 'demo/echo:free', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0', completion: '0' } }] },
          { id: 'up/model', endpoints: [{ provider: 'up', model: 'upstream-model', pricing: { prompt: '0.000001', completion: '0.000002' } }] },
        ],
      },
      clock,
    );
    const res = await gw.fetch('/api/v1/openapi.json');
    expect(res.status).toBe(200);
    doc = (await res.json()) as Json;
    ajv.addSchema(doc, 'openapi.json');
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  it('is valid OpenAPI 3.1, with the gateway version, the configured models and one Error component', async () => {
    const result = await validate(structuredClone(doc) as never);
    if (!result.valid) throw new Error(`invalid OpenAPI document:\n${result.errors.map((e) => e.message).join('\n')}`);
    expect(result.warnings).toEqual([]);
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe((JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version);
    expect(doc.info.description).toContain('demo/echo:free');
    const chatBody = doc.paths['/api/v1/chat/completions'].post.requestBody.content['application/json'];
    expect(chatBody.example.model).toBe('demo/echo');
    expectMatches('openapi.json#/components/schemas/ChatRequest', chatBody.example, 'the example chat request');
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['adminToken', 'apiKey', 'managementKey', 'metricsToken']);
    // Every error response of every operation is one of the shared responses, whose body is the Error component.
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        for (const [status, response] of Object.entries((op as Json).responses as Json)) {
          if (Number(status) >= 400) expect((response as Json).$ref, `${method} ${path} ${status}`).toMatch(/^#\/components\/responses\//);
        }
      }
    }
    for (const response of Object.values(doc.components.responses as Json)) {
      expect((response as Json).content['application/json'].schema).toEqual({ $ref: '#/components/schemas/Error' });
    }
  });

  it('documents every route the gateway serves, and only those', () => {
    const documented = Object.entries(doc.paths as Json)
      .flatMap(([path, item]) => Object.keys(item as Json).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`))
      .sort();
    // The dashboard's static files (/, /assets/…) are a page, not the API.
    // The chat route is served on node:http before Fastify (app.ts): not in Fastify's routes.
    const api = [...servedRoutes(gw.app).filter((r) => !/^GET \/(assets\/.*)?$/.test(r)), `POST ${CHAT_COMPLETIONS_PATH}`].sort();
    expect(documented).toEqual(api);
    expect(documented.length).toBeGreaterThan(20);
  });

  it('the probes, the models, metrics and the document itself answer as documented', async () => {
    await call('get', '/health', 200);
    await call('get', '/health/ready', 200);
    await call('get', '/api/v1/models', 200);
    await call('get', '/api/v1/openapi.json', 200);
    await call('get', '/metrics', 200, { token: 'metrics-token-0123456789' });
    await call('get', '/metrics', 401);
  });

  it('the public routes answer as documented, success and errors (400, 401, 402, 404, 413, 429, 502)', async () => {
    const acct = await gw.account(10);
    const messages = [{ role: 'user', content: 'hello' }];
    await call('get', '/api/v1/key', 200, { token: acct.key });
    await call('get', '/api/v1/key', 401);
    await call('get', '/api/v1/key', 401, { token: 'sk-tg-v1-nope' });
    await call('get', '/api/v1/credits', 200, { token: acct.key });

    const { res, body } = await call('post', '/api/v1/chat/completions', 200, { token: acct.key, body: { model: 'demo/echo', messages } });
    expect(res.headers.get('x-generation-id')).toBe(body.id);
    const streamed = await call('post', '/api/v1/chat/completions', 200, { token: acct.key, body: { model: 'demo/echo', messages, stream: true } });
    expect(streamed.body.at(-1)).toBe('[DONE]');
    expect(streamed.body.length).toBeGreaterThan(2);

    await call('get', '/api/v1/generation', 200, { url: `/api/v1/generation?id=${body.id}`, token: acct.key });
    await call('get', '/api/v1/generation', 400, { token: acct.key });
    await call('get', '/api/v1/generation', 404, { url: '/api/v1/generation?id=gen-unknown', token: acct.key });
    await gw.ledger.flush();
    const latest = await call('get', '/api/v1/generations', 200, { url: '/api/v1/generations?limit=5', token: acct.key });
    expect(latest.body.data.map((g: { id: string }) => g.id)).toContain(body.id);
    await call('get', '/api/v1/generations', 400, { url: '/api/v1/generations?key=other', token: acct.key });
    const activity = await call('get', '/api/v1/key/activity', 200, { token: acct.key });
    expect(activity.body.data.length).toBeGreaterThan(0);

    await call('post', '/api/v1/chat/completions', 400, { token: acct.key, body: { model: 'demo/echo', messages: 'hi' } });
    await call('post', '/api/v1/chat/completions', 400, { token: acct.key, body: { model: 'no/such-model', messages } });
    await call('post', '/api/v1/chat/completions', 400, { token: acct.key, rawBody: '{"model": ' });
    await call('post', '/api/v1/chat/completions', 413, {
      token: acct.key,
      body: { model: 'demo/echo', messages: [{ role: 'user', content: 'x'.repeat(20_000) }] },
    });
    await call('post', '/api/v1/chat/completions', 401, { body: { model: 'demo/echo', messages } });

    const broke = await gw.account(0);
    const refused = await call('post', '/api/v1/chat/completions', 402, { token: broke.key, body: { model: 'demo/echo', messages } });
    expect(refused.body.error.metadata.limit_source).toBe('platform_credits');

    await call('post', '/api/v1/chat/completions', 200, { token: broke.key, body: { model: 'demo/echo:free', messages } });
    const limited = await call('post', '/api/v1/chat/completions', 429, { token: broke.key, body: { model: 'demo/echo:free', messages } });
    expect(limited.body.error.metadata.limit).toBe('free-models-per-minute');
    expect(limited.res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);

    upstream.script({ kind: 'json', status: 500, body: { error: { message: 'boom' } } });
    const failed = await call('post', '/api/v1/chat/completions', 502, { token: acct.key, body: { model: 'up/model', messages } });
    expect(failed.body.error.metadata.provider_name).toBe('up');
    upstream.script({ kind: 'json', status: 422, body: { error: { message: 'cannot' } } });
    await call('post', '/api/v1/chat/completions', 422, { token: acct.key, body: { model: 'up/model', messages } });
    upstream.script({ kind: 'json', status: 429, body: { error: { message: 'slow down', code: 'rate_limit' } } });
    const busy = await call('post', '/api/v1/chat/completions', 429, { token: acct.key, body: { model: 'up/model', messages } });
    expect(busy.body.error.metadata.provider_name).toBe('up');
  });

  it("providers' recorded answers, relayed whole, streamed or cut short midway, match the chat completion schemas", async () => {
    const acct = await gw.account(10);
    const messages = [{ role: 'user', content: 'hi' }];
    for (const file of ['openai-text', 'groq-text', 'groq-tool-call', 'deepseek-text', 'mistral-text', 'xai-text']) {
      upstream.script({ kind: 'json', body: fixtureJson(`${file}.json`) });
      await call('post', '/api/v1/chat/completions', 200, { token: acct.key, body: { model: 'up/model', messages } });
    }
    for (const file of [
      'openai-text',
      'azure-model-router.1',
      'groq-text',
      'groq-tool-call',
      'deepseek-text',
      'deepseek-reasoning',
      'mistral-text',
      'xai-text',
    ]) {
      upstream.script({ kind: 'sse', events: fixtureChunks(`${file}.chunks.txt`) });
      const { body } = await call('post', '/api/v1/chat/completions', 200, { token: acct.key, body: { model: 'up/model', messages, stream: true } });
      expect(body.at(-2).usage.cost).toBeGreaterThan(0);
    }
    upstream.script({ kind: 'sse', events: fixtureChunks('openai-text.chunks.txt'), destroyAfter: 3 });
    const { body } = await call('post', '/api/v1/chat/completions', 200, { token: acct.key, body: { model: 'up/model', messages, stream: true } });
    expect(body.at(-1).error.code).toBe(502);
    expect(body.at(-1).choices[0].finish_reason).toBe('error');
    upstream.script({ kind: 'json', body: upstreamAnswer(3) });
  });

  it('the management routes answer as documented', async () => {
    const acct = await gw.account(10);
    const made = await admin('post', '/api/v1/admin/accounts/{id}/keys', 201, {
      url: `/api/v1/admin/accounts/${acct.id}/keys`,
      body: { name: 'ops', management: true },
    });
    const mk = made.body.key as string;
    const created = await call('post', '/api/v1/keys', 201, { token: mk, body: { name: 'ci', limit: 2.5, limit_reset: 'daily' } });
    const hash = created.body.data.hash as string;
    const one = `/api/v1/keys/${hash}`;
    await call('get', '/api/v1/keys', 200, { token: mk });
    await call('get', '/api/v1/keys', 200, { url: '/api/v1/keys?offset=0&include_disabled=true', token: mk });
    await call('get', '/api/v1/keys', 400, { url: '/api/v1/keys?offset=-1', token: mk });
    await call('get', '/api/v1/keys/{hash}', 200, { url: one, token: mk });
    await call('patch', '/api/v1/keys/{hash}', 200, { url: one, token: mk, body: { disabled: true, limit: null } });
    await call('patch', '/api/v1/keys/{hash}', 400, { url: one, token: mk, body: { limit: 'lots' } });
    await call('post', '/api/v1/keys/{hash}/rotate', 200, { url: `${one}/rotate`, token: mk, body: { grace_seconds: 60 } });
    await call('post', '/api/v1/keys', 400, { token: mk, body: { name: '' } });
    await call('get', '/api/v1/keys/{hash}', 404, { url: `/api/v1/keys/${acct.hash.replace(/.$/, (c) => (c === '0' ? '1' : '0'))}`, token: mk });
    await call('get', '/api/v1/keys', 401, { token: acct.key });
    await call('delete', '/api/v1/keys/{hash}', 200, { url: one, token: mk });
    await call('delete', '/api/v1/keys/{hash}', 404, { url: one, token: mk });
    // Activity, after a charge of the account's.
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } });
    expect(res.status).toBe(200);
    await gw.ledger.flush();
    const activity = await call('get', '/api/v1/activity', 200, { token: mk });
    expect(activity.body.data.length).toBeGreaterThan(0);
    await call('get', '/api/v1/activity', 400, { url: '/api/v1/activity?date=yesterday', token: mk });
  });

  it('the admin routes answer as documented', async () => {
    const { body: account } = await admin('post', '/api/v1/admin/accounts', 201, { body: { name: 'Ada', type: 'prepaid' } });
    const id = account.data.id as string;
    const at = (p: string) => `/api/v1/admin/accounts/${id}${p}`;
    await admin('get', '/api/v1/admin/accounts/{id}', 200, { url: at('') });
    await admin('get', '/api/v1/admin/accounts/{id}', 404, { url: '/api/v1/admin/accounts/acct_nope' });
    await call('get', '/api/v1/admin/accounts/{id}', 401, { url: at('') });
    await admin('post', '/api/v1/admin/accounts/{id}/credits', 200, { url: at('/credits'), body: { amount: 5 } });
    await admin('post', '/api/v1/admin/accounts/{id}/credits', 400, { url: at('/credits'), body: { amount: 0.0000000001 } });
    const { body: key } = await admin('post', '/api/v1/admin/accounts/{id}/keys', 201, {
      url: at('/keys'),
      body: { name: 'k', limit: 1, expires_at: '2030-01-01T00:00:00Z' },
    });
    await admin('get', '/api/v1/admin/accounts/{id}/keys', 200, { url: at('/keys') });
    const k = `/api/v1/admin/keys/${key.data.hash as string}`;
    await admin('patch', '/api/v1/admin/keys/{hash}', 200, { url: k, body: { name: 'renamed', limit_reset: 'weekly' } });
    await admin('post', '/api/v1/admin/keys/{hash}/rotate', 200, { url: `${k}/rotate`, body: {} });
    await admin('delete', '/api/v1/admin/keys/{hash}', 200, { url: k });
    await admin('delete', '/api/v1/admin/keys/{hash}', 404, { url: k });
    await admin('put', '/api/v1/admin/accounts/{id}/byok/{provider}', 204, { url: at('/byok/up'), body: { api_key: 'sk-own-key' } });
    await admin('put', '/api/v1/admin/accounts/{id}/byok/{provider}', 404, { url: at('/byok/nope'), body: { api_key: 'sk-own-key' } });
    await admin('delete', '/api/v1/admin/accounts/{id}/byok/{provider}', 204, { url: at('/byok/up') });
    await admin('post', '/api/v1/admin/accounts', 400, { body: { name: 'x', colour: 'red' } });
    // Reports: accounts, generations and spend.
    const chat = await gw.fetch('/api/v1/chat/completions', { token: key.key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } });
    expect(chat.status).toBe(401); // the key was deleted above: a new one charges
    const fresh = await gw.admin.createKey(id, { name: 'reporting' });
    expect(
      (await gw.fetch('/api/v1/chat/completions', { token: fresh.key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } })).status,
    ).toBe(200);
    await gw.ledger.flush();
    const page = await admin('get', '/api/v1/admin/accounts', 200, { url: '/api/v1/admin/accounts?search=ada&limit=10' });
    expect(page.body.total).toBeGreaterThan(0);
    await admin('get', '/api/v1/admin/accounts', 400, { url: '/api/v1/admin/accounts?limit=0' });
    const gens = await admin('get', '/api/v1/admin/accounts/{id}/generations', 200, { url: at('/generations?status=completed') });
    expect(gens.body.data.length).toBe(1);
    await admin('get', '/api/v1/admin/accounts/{id}/generations', 404, { url: '/api/v1/admin/accounts/acct_nope/generations' });
    await admin('get', '/api/v1/admin/accounts/{id}/generations', 400, { url: at('/generations?status=lost') });
    const spend = await admin('get', '/api/v1/admin/reports/spend', 200, { url: `/api/v1/admin/reports/spend?by=account,key,model,provider&account=${id}` });
    expect(spend.body.data.length).toBe(1);
    await admin('get', '/api/v1/admin/reports/spend', 400, { url: '/api/v1/admin/reports/spend?bucket=week' });
    await admin('get', '/api/v1/admin/accounts/{id}/byok', 200, { url: at('/byok') });
    await admin('get', '/api/v1/admin/providers', 200);
    // Webhooks: listed, and the test action.
    const hooks = await admin('get', '/api/v1/admin/webhooks', 200);
    expect(hooks.body.data.map((h: { id: string }) => h.id)).toEqual(['hook']);
    const tried = await admin('post', '/api/v1/admin/webhooks/{id}/test', 200, { url: '/api/v1/admin/webhooks/hook/test' });
    expect(tried.body.data.delivered).toBe(false);
    await admin('post', '/api/v1/admin/webhooks/{id}/test', 404, { url: '/api/v1/admin/webhooks/nope/test' });
  });

  it("every route's success answer was checked, and each error status checked is one its route documents", () => {
    for (const [path, item] of Object.entries(doc.paths as Json)) {
      for (const [method, op] of Object.entries(item as Json)) {
        const success = Object.keys((op as Json).responses as Json).filter((s) => Number(s) < 300);
        expect(
          success.some((s) => checked.has(`${method} ${path} ${s}`)),
          `${method.toUpperCase()} ${path}`,
        ).toBe(true);
      }
    }
    for (const status of [400, 401, 402, 404, 413, 422, 429, 502])
      expect(
        [...checked].some((c) => c.endsWith(` ${status}`)),
        String(status),
      ).toBe(true);
  });
});
