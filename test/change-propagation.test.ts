import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseTargets } from './helpers/database.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';
import { privateRedisMissing, startPrivateRedis } from './helpers/private-redis.js';
import { redisUrl } from './helpers/redis.js';
import { ScriptedUpstream, upstreamAnswer } from './helpers/scripted-upstream.js';

const postgres = databaseTargets.find((t) => t.name === 'postgres');

/**
 * Polls `probe` until it holds, and fails unless a probe that started within 1 s of the call holds
 * (CONTRACT §8: admin changes take effect on every process within 1 s). Answers when it held.
 */
async function withinOneSecond(probe: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  for (;;) {
    const startedAt = performance.now() - start;
    if (await probe()) return startedAt;
    if (startedAt > 1_000) throw new Error('the change did not show on the other process within 1 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

// Two gateway processes in one test process, on one PostgreSQL database and one Redis (one prefix).
// Their clocks stand still, so no cache entry ever ages out: only the change feed can tell B of A's change.
describe.skipIf(!postgres || !redisUrl)('admin changes made through one process take effect on another within 1 s (CONTRACT §8)', () => {
  const upstream = new ScriptedUpstream();
  let a: TestGateway;
  let b: TestGateway;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const db = await postgres!.create();
    drop = db.drop;
    const base = await upstream.start();
    upstream.script({ kind: 'json', body: upstreamAnswer(5) });
    const config = {
      database_url: db.url,
      redis_url: redisUrl,
      redis_key_prefix: `tollgate-test:${process.pid}:${randomBytes(4).toString('hex')}:`,
      providers: [
        { id: 'demo', type: 'demo' as const, token_latency_ms: 0 },
        { id: 'acme', type: 'openai' as const, base_url: base, api_key: 'platform-acme-key' },
      ],
      models: [
        { id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] },
        { id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small-v1', pricing: { prompt: '0.00001', completion: '0.00002' } }] },
      ],
    };
    a = await startTestGateway(config);
    b = await startTestGateway(config);
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await upstream.stop();
    await drop?.();
  });

  const adminOn = (gw: TestGateway, path: string, init: { method?: string; body?: unknown } = {}) =>
    gw.fetch(`/api/v1/admin${path}`, { ...init, token: ADMIN_TOKEN });
  const keyStatus = async (gw: TestGateway, key: string) => {
    const res = await gw.fetch('/api/v1/key', { token: key });
    return { status: res.status, data: res.status === 200 ? ((await res.json()) as { data: Record<string, unknown> }).data : undefined };
  };
  const ask = (gw: TestGateway, key: string, model = 'demo/echo') =>
    gw.fetch('/api/v1/chat/completions', { token: key, body: { model, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] } });

  it('a key disabled through A is refused by B', async () => {
    const acct = await a.account(10);
    expect((await keyStatus(b, acct.key)).status).toBe(200); // B has it cached now
    expect((await ask(b, acct.key)).status).toBe(200);
    expect((await adminOn(a, `/keys/${acct.hash}`, { method: 'PATCH', body: { disabled: true } })).status).toBe(200);
    await withinOneSecond(async () => (await ask(b, acct.key)).status === 401);
    expect((await keyStatus(b, acct.key)).status).toBe(401);
    // … and enabled again.
    expect((await adminOn(a, `/keys/${acct.hash}`, { method: 'PATCH', body: { disabled: false } })).status).toBe(200);
    await withinOneSecond(async () => (await ask(b, acct.key)).status === 200);
  });

  it('a key deleted through A is refused by B', async () => {
    const acct = await a.account(10);
    expect((await keyStatus(b, acct.key)).status).toBe(200);
    expect((await adminOn(a, `/keys/${acct.hash}`, { method: 'DELETE' })).status).toBe(200);
    await withinOneSecond(async () => (await keyStatus(b, acct.key)).status === 401);
  });

  it('a key rotated through A: B refuses the old secret within 1 s and takes the new one at once', async () => {
    const acct = await a.account(10);
    expect((await keyStatus(b, acct.key)).status).toBe(200); // B has the secret and the key cached
    const res = await adminOn(a, `/keys/${acct.hash}/rotate`, { method: 'POST', body: {} });
    expect(res.status).toBe(200);
    const { key } = (await res.json()) as { key: string };
    expect((await keyStatus(b, key)).status).toBe(200);
    await withinOneSecond(async () => (await ask(b, acct.key)).status === 401);
    expect((await ask(b, key)).status).toBe(200);
  });

  it('a key rotated with a grace period through A: B takes both secrets until it ends', async () => {
    const acct = await a.account(10);
    expect((await keyStatus(b, acct.key)).status).toBe(200);
    const res = await adminOn(a, `/keys/${acct.hash}/rotate`, { method: 'POST', body: { grace_seconds: 600 } });
    const { key } = (await res.json()) as { key: string };
    expect((await ask(b, key)).status).toBe(200);
    expect((await ask(b, acct.key)).status).toBe(200);
  });

  it('a key created through the management API on B works on A at once; one deleted through A stops on B within 1 s', async () => {
    const acct = await a.account(10);
    const made = (await (await adminOn(a, `/accounts/${acct.id}/keys`, { method: 'POST', body: { management: true } })).json()) as { key: string };
    const created = await b.fetch('/api/v1/keys', { token: made.key, body: { name: 'from-b' } });
    expect(created.status).toBe(201);
    const { key, data } = (await created.json()) as { key: string; data: { hash: string } };
    expect((await ask(a, key)).status).toBe(200);
    expect((await a.fetch(`/api/v1/keys/${data.hash}`, { method: 'DELETE', token: made.key })).status).toBe(200);
    await withinOneSecond(async () => (await ask(b, key)).status === 401);
  });

  it('a key re-limited through A is held to its new limit by B', async () => {
    const acct = await a.account(10, { limit: 5 });
    expect((await keyStatus(b, acct.key)).data).toMatchObject({ limit: 5 });
    expect((await ask(b, acct.key)).status).toBe(200);
    expect((await adminOn(a, `/keys/${acct.hash}`, { method: 'PATCH', body: { limit: 0.000001 } })).status).toBe(200);
    await withinOneSecond(async () => (await keyStatus(b, acct.key)).data?.limit === 0.000001);
    const refused = await ask(b, acct.key);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { error: { metadata: Record<string, unknown> } }).error.metadata.limit_source).toBe('platform_key_limit');
  });

  it('a key created through A works on B at once', async () => {
    const acct = await a.account(10);
    const { key } = await a.admin.createKey(acct.id, { name: 'second' });
    expect((await keyStatus(b, key)).status).toBe(200);
  });

  it('credits added through A show on B’s /api/v1/credits', async () => {
    const acct = await a.account(10);
    const credits = async () =>
      ((await (await b.fetch('/api/v1/credits', { token: acct.key })).json()) as { data: { total_credits: number } }).data.total_credits;
    expect(await credits()).toBe(10);
    expect((await adminOn(a, `/accounts/${acct.id}/credits`, { method: 'POST', body: { amount: 5 } })).status).toBe(200);
    await withinOneSecond(async () => (await credits()) === 15);
    expect(((await (await adminOn(b, `/accounts/${acct.id}`)).json()) as { data: { total_purchased: number } }).data.total_purchased).toBe(15);
  });

  it('a BYOK key put through A is used by B, and one removed through A no longer is', async () => {
    const acct = await a.account(10);
    const lastAuthorization = async () => {
      expect((await ask(b, acct.key, 'acme/small')).status).toBe(200);
      return upstream.received.at(-1)?.headers.authorization;
    };
    expect(await lastAuthorization()).toBe('Bearer platform-acme-key'); // B has the account's (no) BYOK keys cached
    expect((await adminOn(a, `/accounts/${acct.id}/byok/acme`, { method: 'PUT', body: { api_key: 'sk-own-key-put-on-a' } })).status).toBe(204);
    await withinOneSecond(async () => (await lastAuthorization()) === 'Bearer sk-own-key-put-on-a');
    expect((await adminOn(a, `/accounts/${acct.id}/byok/acme`, { method: 'DELETE' })).status).toBe(204);
    await withinOneSecond(async () => (await lastAuthorization()) === 'Bearer platform-acme-key');
    expect(a.log.text + b.log.text).not.toContain('sk-own-key-put-on-a');
  });
});

describe.skipIf(!postgres || privateRedisMissing() !== undefined)('a Redis URL with a password', () => {
  it('connects with it and never writes it to the log', async () => {
    const password = `pw-${randomBytes(8).toString('hex')}`;
    const server = await startPrivateRedis(['--requirepass', password]);
    const db = await postgres!.create();
    const url = new URL(server.url);
    url.password = password;
    let gw: TestGateway | undefined;
    try {
      gw = await startTestGateway({ database_url: db.url, redis_url: url.toString(), log_level: 'debug' });
      const acct = await gw.account(1);
      await gw.admin.patchKey(acct.hash, { disabled: true });
      // The change went through this Redis: a subscriber there heard it.
      const listener = new Redis(url.toString());
      const heard = new Promise<string>((resolve) => listener.on('message', (_channel: string, text: string) => resolve(text)));
      await listener.subscribe('tollgate:changes');
      await gw.admin.patchKey(acct.hash, { disabled: false });
      expect(JSON.parse(await heard)).toMatchObject({ c: { kind: 'key', hash: acct.hash } });
      listener.disconnect();
      expect(gw.log.text).not.toContain(password);
      expect(gw.log.text).not.toContain('change feed not live');
    } finally {
      await gw?.close();
      await db.drop();
      await server.stop();
    }
  });
});
