import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

// Issue 11: the API the dashboard needs beyond CONTRACT §5 and §9: a key's latest generations and its
// spend per day and model; the operator's view of providers' health and of an account's BYOK keys.

const DAY = 86_400_000;

describe('issue 11: the endpoints behind the dashboard', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 20, 10));
  let gw: TestGateway;
  let acct: { id: string; key: string; hash: string };
  let other: { key: string; hash: string };
  let management: string;
  const get = async (path: string, token: string) => {
    const res = await gw.fetch(path, { token });
    return { status: res.status, body: (await res.json()) as any };
  };
  const chat = async (key: string, model = 'demo/echo') => {
    const res = await gw.fetch('/api/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content: 'hi' }] } });
    expect(res.status).toBe(200);
    return (await res.json()) as { id: string; usage: { cost: number } };
  };

  beforeAll(async () => {
    gw = await startTestGateway({}, clock);
    acct = await gw.account(10);
    const second = await gw.admin.createKey(acct.id, { name: 'second' });
    other = { key: second.key, hash: second.data.hash };
    management = (await gw.admin.createKey(acct.id, { name: 'owner', management: true })).key;
  });
  afterAll(() => gw.close());

  it("GET /api/v1/generations: the calling key's latest, newest first, in the /generation shape; a management key sees its account's", async () => {
    const first = await chat(acct.key);
    clock.advance(1000);
    const second = await chat(acct.key, 'demo/echo:free');
    clock.advance(1000);
    const theirs = await chat(other.key);
    await gw.ledger.flush();
    const mine = await get('/api/v1/generations', acct.key);
    expect(mine.status).toBe(200);
    expect(mine.body.data.map((g: any) => g.id)).toEqual([second.id, first.id]);
    const one = await get(`/api/v1/generation?id=${first.id}`, acct.key);
    expect(mine.body.data[1]).toEqual(one.body.data);
    expect((await get('/api/v1/generations?limit=1', acct.key)).body.data.map((g: any) => g.id)).toEqual([second.id]);
    expect((await get('/api/v1/generations?limit=0', acct.key)).status).toBe(400);
    expect((await get(`/api/v1/generations?key=${other.hash}`, acct.key)).status).toBe(400);
    const owner = await get('/api/v1/generations', management);
    expect(owner.body.data.map((g: any) => g.id)).toEqual([theirs.id, second.id, first.id]);
    expect((await get(`/api/v1/generations?key=${other.hash}`, management)).body.data.map((g: any) => g.id)).toEqual([theirs.id]);
    expect((await get('/api/v1/generations', 'sk-tg-v1-nothing')).status).toBe(401);
  });

  it("GET /api/v1/key/activity: the key's spend per UTC day and model over 30 days, from the rollups", async () => {
    clock.advance(DAY);
    const today = await chat(acct.key);
    await gw.ledger.flush();
    const res = await get('/api/v1/key/activity', acct.key);
    expect(res.status).toBe(200);
    expect(res.body.to).toBe('2026-11-21');
    expect(res.body.from).toBe('2026-10-23');
    const rows = res.body.data as Array<{ date: string; model: string; requests: number; usage: number }>;
    expect(rows.map((r) => [r.date, r.model, r.requests])).toEqual([
      ['2026-11-20', 'demo/echo', 1],
      ['2026-11-20', 'demo/echo:free', 1],
      ['2026-11-21', 'demo/echo', 1],
    ]);
    expect(rows[2]!.usage).toBe(today.usage.cost);
    // The other key's spend is its own; a management key sees the account's.
    expect((await get('/api/v1/key/activity', other.key)).body.data.map((r: any) => r.requests)).toEqual([1]);
    const owner = (await get('/api/v1/key/activity', management)).body.data as Array<{ requests: number }>;
    expect(owner.reduce((a, r) => a + r.requests, 0)).toBe(4);
    expect((await get('/api/v1/key/activity?x=1', acct.key)).status).toBe(400);
  });

  it('GET /api/v1/admin/providers: per-process health (calls, failures, latency, cooldowns); admin only', async () => {
    const res = await get('/api/v1/admin/providers', ADMIN_TOKEN);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ per_process: true, window_seconds: 300, cooldowns: [] });
    const demo = res.body.data.find((p: any) => p.provider === 'demo');
    expect(demo).toMatchObject({ provider: 'demo', failures: {}, error_rate: 0 });
    expect(demo.ok).toBeGreaterThanOrEqual(1);
    expect(typeof demo.latency_ms.mean).toBe('number');
    expect((await get('/api/v1/admin/providers', acct.key)).status).toBe(401);
    // Past the window, the calls no longer count.
    clock.advance(10 * 60_000);
    const later = (await get('/api/v1/admin/providers', ADMIN_TOKEN)).body.data.find((p: any) => p.provider === 'demo');
    expect(later).toMatchObject({ ok: 0, error_rate: null });
  });

  it("GET /api/v1/admin/accounts/:id/byok: which configured providers hold the account's own key, never the key", async () => {
    const path = `/api/v1/admin/accounts/${acct.id}/byok`;
    expect((await get(path, ADMIN_TOKEN)).body.data).toEqual([{ provider: 'demo', stored: false }]);
    const put = await gw.fetch(`${path}/demo`, { token: ADMIN_TOKEN, method: 'PUT', body: { api_key: 'sk-secret-own-key' } });
    expect(put.status).toBe(204);
    const listed = await gw.fetch(path, { token: ADMIN_TOKEN });
    const text = await listed.text();
    expect(JSON.parse(text).data).toEqual([{ provider: 'demo', stored: true }]);
    expect(text).not.toContain('sk-secret-own-key');
    expect((await get('/api/v1/admin/accounts/nope/byok', ADMIN_TOKEN)).status).toBe(404);
  });
});
