import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ScriptedUpstream } from './helpers/scripted-upstream.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

/** The rows of a ledger table, read straight from the database (a test-only look behind the interface). */
async function tableText(gw: TestGateway, table: 'api_keys' | 'byok_secrets' | 'key_secrets' | 'key_usage'): Promise<string> {
  const db = (gw.ledger as unknown as { db: { selectFrom(t: string): { selectAll(): { execute(): Promise<unknown[]> } } } }).db;
  const rows = await db.selectFrom(table).selectAll().execute();
  return JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
}

describe('admin API', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 22, 12));
  const upstream = new ScriptedUpstream();
  let gw: TestGateway;
  const admin = (path: string, init: { method?: string; body?: unknown } = {}) => gw.fetch(`/api/v1/admin${path}`, { ...init, token: ADMIN_TOKEN });

  beforeAll(async () => {
    const base = await upstream.start();
    gw = await startTestGateway(
      {
        providers: [
          { id: 'demo', type: 'demo', token_latency_ms: 0 },
          { id: 'acme', type: 'openai', base_url: base, api_key: 'platform-acme-key' },
        ],
        models: [
          { id: 'demo/echo', endpoints: [{ provider: 'demo', model: 'echo', pricing: { prompt: '0.000001', completion: '0.000002' } }] },
          { id: 'acme/small', endpoints: [{ provider: 'acme', model: 'small-v1', pricing: { prompt: '0.00001', completion: '0.00002' } }] },
        ],
      },
      clock,
    );
  });
  afterAll(async () => {
    await gw.close();
    await upstream.stop();
  });

  async function newAccount(body: Record<string, unknown> = { name: 'Ada' }) {
    const res = await admin('/accounts', { method: 'POST', body });
    expect(res.status).toBe(201);
    return ((await res.json()) as { data: Record<string, any> }).data;
  }

  it('creates accounts with a type, a creation date and the free-limit exemption', async () => {
    const a = await newAccount({ name: 'Ada' });
    expect(a).toMatchObject({ name: 'Ada', type: 'prepaid', balance: 0, total_purchased: 0, total_usage: 0, free_model_limits_exempt: false });
    expect(a.in_flight).toEqual({ subject: true, budget: 0, held: 0 });
    expect(a.id).toMatch(/^acct_/);
    expect(a.created_at).toBe(new Date(clock.now()).toISOString());
    const e = await newAccount({ name: 'Corp', type: 'enterprise', created_at: '2024-01-02T03:04:05Z', free_model_limits_exempt: true });
    expect(e).toMatchObject({ type: 'enterprise', created_at: '2024-01-02T03:04:05.000Z', free_model_limits_exempt: true });
    const got = await admin(`/accounts/${e.id}`);
    expect(((await got.json()) as { data: unknown }).data).toEqual(e);
  });

  it('rejects bad account input with a 400 naming the field', async () => {
    for (const [body, field] of [
      [{}, 'name'],
      [{ name: 'x', type: 'gold' }, 'type'],
      [{ name: 'x', created_at: 'yesterday' }, 'created_at'],
      [{ name: 'x', colour: 'red' }, 'body'],
    ] as const) {
      const res = await admin('/accounts', { method: 'POST', body });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(field);
    }
    expect((await admin('/accounts/acct_missing')).status).toBe(404);
  });

  it('adds purchases and adjustments exactly, and refuses bad amounts', async () => {
    const a = await newAccount();
    const post = (body: unknown) => admin(`/accounts/${a.id}/credits`, { method: 'POST', body });
    expect((await post({ amount: 0.1 })).status).toBe(200);
    expect((await post({ amount: 0.2 })).status).toBe(200);
    const adj = await post({ amount: -0.05, kind: 'adjustment' });
    const data = ((await adj.json()) as { data: Record<string, number> }).data;
    expect(data.balance).toBe(0.25); // 0.1 + 0.2 − 0.05, exactly, not 0.25000000000000006
    expect(data.total_purchased).toBe(0.3);
    expect(data.in_flight).toEqual({ subject: true, budget: 0.125, held: 0 }); // min(0.5 × 0.25, 50)
    for (const bad of [{ amount: -1 }, { amount: 0 }, { amount: 0.0000000001 }, { amount: 1_000_000_001 }, { amount: '5' }, { amount: 1, kind: 'gift' }]) {
      const res = await post(bad);
      expect(res.status, JSON.stringify(bad)).toBe(400);
    }
    expect((await admin('/accounts/acct_missing/credits', { method: 'POST', body: { amount: 1 } })).status).toBe(404);
  });

  it('creates a key shown once, stored only as its hash, and lists, patches and deletes it', async () => {
    const a = await newAccount();
    const res = await admin(`/accounts/${a.id}/keys`, { method: 'POST', body: { name: 'ci', limit: 2.5, limit_reset: 'daily', include_byok_in_limit: true } });
    expect(res.status).toBe(201);
    const { key, data } = (await res.json()) as { key: string; data: Record<string, any> };
    expect(key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(data).toMatchObject({ name: 'ci', disabled: false, limit: 2.5, limit_reset: 'daily', limit_remaining: 2.5, include_byok_in_limit: true, usage: 0 });
    expect(data.label).toBe(`${key.slice(0, 12)}...${key.slice(-3)}`);

    // At rest: no table holds the key itself.
    const rows = await tableText(gw, 'api_keys');
    expect(rows).not.toContain(key.slice(9));
    expect(rows).toContain(data.hash);

    const list = ((await (await admin(`/accounts/${a.id}/keys`)).json()) as { data: Array<{ hash: string }> }).data;
    expect(list.map((k) => k.hash)).toEqual([data.hash]);
    expect(JSON.stringify(list)).not.toContain(key);

    const patched = await admin(`/keys/${data.hash}`, { method: 'PATCH', body: { name: 'renamed', limit: null, disabled: true } });
    expect(((await patched.json()) as { data: unknown }).data).toMatchObject({ name: 'renamed', limit: null, limit_remaining: null, disabled: true });
    expect((await admin(`/keys/${data.hash}`, { method: 'PATCH', body: { limit: -1 } })).status).toBe(400);
    expect((await admin(`/keys/${data.hash}`, { method: 'PATCH', body: { limit_reset: 'hourly' } })).status).toBe(400);

    const del = await admin(`/keys/${data.hash}`, { method: 'DELETE' });
    expect(await del.json()).toEqual({ deleted: true });
    expect((await admin(`/keys/${data.hash}`, { method: 'DELETE' })).status).toBe(404);
    expect((await gw.fetch('/api/v1/key', { token: key })).status).toBe(401);
  });

  it('rotates a key: a new secret shown once, the same hash, usage and limits; the old secret works for grace_seconds, then 401', async () => {
    const acct = await gw.account(5, { name: 'rot', limit: 4 });
    const chat = (key: string) =>
      gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } });
    expect((await chat(acct.key)).status).toBe(200);
    const before = ((await (await gw.fetch('/api/v1/key', { token: acct.key })).json()) as { data: { usage: number } }).data.usage;

    const res = await admin(`/keys/${acct.hash}/rotate`, { method: 'POST', body: { grace_seconds: 30 } });
    expect(res.status).toBe(200);
    const { key, data } = (await res.json()) as { key: string; data: Record<string, any> };
    expect(key).toMatch(/^sk-tg-v1-[0-9a-f]{64}$/);
    expect(data).toMatchObject({ hash: acct.hash, name: 'rot', limit: 4, usage: before, label: `${key.slice(0, 12)}...${key.slice(-3)}` });
    expect(data.updated_at).toBe(new Date(clock.now()).toISOString());
    // Only the secrets' hashes are stored.
    const stored = await tableText(gw, 'key_secrets');
    expect(stored).not.toContain(key.slice(9));
    expect(stored).not.toContain(acct.key.slice(9));

    expect((await chat(key)).status).toBe(200);
    clock.advance(29_999);
    expect((await gw.fetch('/api/v1/key', { token: acct.key })).status).toBe(200);
    clock.advance(1);
    expect((await gw.fetch('/api/v1/key', { token: acct.key })).status).toBe(401);
    const status = ((await (await gw.fetch('/api/v1/key', { token: key })).json()) as { data: { usage: number; limit: number } }).data;
    expect(status.limit).toBe(4);
    expect(status.usage).toBeGreaterThan(before); // the request made with the new secret counts on the same key

    expect((await admin('/keys/no-such-hash/rotate', { method: 'POST', body: {} })).status).toBe(404);
    for (const body of [{ grace_seconds: -5 }, { grace_seconds: 2.5 }, { grace_seconds: 2_592_001 }, { grace: 5 }]) {
      const bad = await admin(`/keys/${acct.hash}/rotate`, { method: 'POST', body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/grace/);
    }
    expect(gw.log.text).not.toContain(key);
  });

  it('sets and clears expires_at on PATCH, and refuses one in the past with a 400 naming it, on create and on PATCH', async () => {
    const a = await newAccount();
    const later = new Date(clock.now() + 3_600_000).toISOString();
    const created = await admin(`/accounts/${a.id}/keys`, { method: 'POST', body: { expires_at: later } });
    expect(created.status).toBe(201);
    const { data } = (await created.json()) as { data: { hash: string; expires_at: string } };
    expect(data.expires_at).toBe(later);
    const cleared = await admin(`/keys/${data.hash}`, { method: 'PATCH', body: { expires_at: null } });
    expect(((await cleared.json()) as { data: { expires_at: unknown } }).data.expires_at).toBeNull();
    const past = new Date(clock.now() - 1).toISOString();
    for (const res of [
      await admin(`/accounts/${a.id}/keys`, { method: 'POST', body: { expires_at: past } }),
      await admin(`/keys/${data.hash}`, { method: 'PATCH', body: { expires_at: past } }),
      await admin(`/keys/${data.hash}`, { method: 'PATCH', body: { expires_at: 'tomorrow' } }),
    ]) {
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string; metadata: unknown } }).error).toMatchObject({
        message: expect.stringContaining('expires_at'),
        metadata: { field: 'expires_at' },
      });
    }
  });

  it('creates management keys, listed with management: true; they report is_management_key and are refused for inference', async () => {
    const a = await newAccount();
    const res = await admin(`/accounts/${a.id}/keys`, { method: 'POST', body: { name: 'ops', management: true } });
    expect(res.status).toBe(201);
    const { key, data } = (await res.json()) as { key: string; data: { hash: string; management: boolean } };
    expect(data.management).toBe(true);
    const list = ((await (await admin(`/accounts/${a.id}/keys`)).json()) as { data: Array<{ hash: string; management: boolean }> }).data;
    expect(list).toEqual([expect.objectContaining({ hash: data.hash, management: true })]);
    const status = (await (await gw.fetch('/api/v1/key', { token: key })).json()) as { data: { is_management_key: boolean } };
    expect(status.data.is_management_key).toBe(true);
    const chat = await gw.fetch('/api/v1/chat/completions', { token: key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } });
    expect(chat.status).toBe(401);
    expect((await admin(`/accounts/${a.id}/keys`, { method: 'POST', body: { management: 'yes' } })).status).toBe(400);
  });

  it('deleting a key keeps its record, usage and generations: reports can still name it', async () => {
    const acct = await gw.account(5);
    const answer = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'demo/echo', messages: [{ role: 'user', content: 'hi' }] } });
    const { id } = (await answer.json()) as { id: string };
    expect((await admin(`/keys/${acct.hash}`, { method: 'DELETE' })).status).toBe(200);
    expect((await gw.fetch('/api/v1/key', { token: acct.key })).status).toBe(401);
    expect(((await (await admin(`/accounts/${acct.id}/keys`)).json()) as { data: unknown[] }).data).toEqual([]);
    expect((await admin(`/keys/${acct.hash}`, { method: 'PATCH', body: { disabled: false } })).status).toBe(404);
    expect((await admin(`/keys/${acct.hash}/rotate`, { method: 'POST', body: {} })).status).toBe(404);
    expect(await tableText(gw, 'api_keys')).toContain(acct.hash);
    expect(await tableText(gw, 'key_usage')).toContain(acct.hash);
    expect((await gw.ledger.getGeneration(id))?.keyHash).toBe(acct.hash);
    const account = ((await (await admin(`/accounts/${acct.id}`)).json()) as { data: { total_usage: number } }).data;
    expect(account.total_usage).toBeGreaterThan(0);
  });

  it('stores BYOK keys encrypted, never returns them, and serves requests with them at the BYOK fee', async () => {
    const acct = await gw.account(1);
    const byokKey = 'sk-my-own-acme-key-123456';
    const put = await admin(`/accounts/${acct.id}/byok/acme`, { method: 'PUT', body: { api_key: byokKey } });
    expect(put.status).toBe(204);
    expect(await put.text()).toBe('');
    const rows = await tableText(gw, 'byok_secrets');
    expect(rows).toContain('acme');
    expect(rows).not.toContain(byokKey);
    expect((await admin(`/accounts/${acct.id}/byok/nowhere`, { method: 'PUT', body: { api_key: 'x' } })).status).toBe(404);

    upstream.script({
      kind: 'json',
      body: {
        id: 'u',
        object: 'chat.completion',
        created: 1,
        model: 'small-v1',
        choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
      },
    });
    const res = await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'acme/small', messages: [{ role: 'user', content: 'hi' }] } });
    const body = (await res.json()) as { usage: { cost: number; is_byok: boolean } };
    expect(upstream.received.at(-1)?.headers.authorization).toBe(`Bearer ${byokKey}`);
    // list price 100 × 0.00001 + 50 × 0.00002 = 0.002; BYOK fee 5% = 0.0001
    expect(body.usage).toMatchObject({ cost: 0.0001, is_byok: true });
    const status = ((await (await gw.fetch('/api/v1/key', { token: acct.key })).json()) as { data: Record<string, number> }).data;
    expect(status.usage).toBe(0.0001);
    expect(status.byok_usage).toBe(0.002);
    expect(status.byok_usage_daily).toBe(0.002);

    expect((await admin(`/accounts/${acct.id}/byok/acme`, { method: 'DELETE' })).status).toBe(204);
    expect((await admin(`/accounts/${acct.id}/byok/acme`, { method: 'DELETE' })).status).toBe(404);
    await gw.fetch('/api/v1/chat/completions', { token: acct.key, body: { model: 'acme/small', messages: [{ role: 'user', content: 'hi' }] } });
    expect(upstream.received.at(-1)?.headers.authorization).toBe('Bearer platform-acme-key');
    expect(gw.log.text).not.toContain(byokKey);
    expect(gw.log.text).not.toContain('platform-acme-key');
    expect(gw.log.text).not.toContain(acct.key);
    expect(gw.log.text).not.toContain(ADMIN_TOKEN);
  });
});
