import { OpenRouter } from '@openrouter/sdk';
import * as errors from '@openrouter/sdk/models/errors';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { openDatabase } from '../src/ledger/database.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { migrateToLatest } from '../src/ledger/migrations.js';
import { databaseTargets, migrateUpTo } from './helpers/database.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './helpers/gateway.js';

// Issue 10: spend reports for the operator (accounts, generations, spend by day or hour and by key,
// model or provider) and activity for account owners (CONTRACT §9, driven by the official SDK), all
// read from rollups the group commit keeps, on SQLite and PostgreSQL.

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const DAY1 = Date.UTC(2026, 10, 20);

for (const target of databaseTargets) {
  describe(`issue 10: reports and activity (${target.name})`, () => {
    const clock = new ManualClock(DAY1 + 10 * HOUR + 5 * 60_000);
    let gw: TestGateway;
    let drop: () => Promise<void>;
    const admin = async (path: string) => {
      const res = await gw.fetch(path, { token: ADMIN_TOKEN });
      return { status: res.status, body: (await res.json()) as any };
    };
    const chat = async (key: string, model = 'demo/echo', content = 'hello there') => {
      const res = await gw.fetch('/api/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content }] } });
      expect(res.status).toBe(200);
      return (await res.json()) as { id: string; usage: { cost: number; prompt_tokens: number; completion_tokens: number } };
    };
    let alpha: { id: string; key: string; hash: string };
    let second: { key: string; hash: string };
    let beta: { id: string; key: string; hash: string };
    let management: string;
    const costs: number[] = [];

    beforeAll(async () => {
      const db = await target.create();
      drop = db.drop;
      gw = await startTestGateway({ database_url: db.url }, clock);
      alpha = await gw.account(10);
      await gw.admin.getAccount(alpha.id);
      const made = await gw.admin.createKey(alpha.id, { name: 'second' });
      second = { key: made.key, hash: made.data.hash };
      const mk = await gw.admin.createKey(alpha.id, { name: 'ops', management: true });
      management = mk.key;
      beta = await gw.account(10);
      // Day 1, 10:05: two requests on alpha's first key, one on its second; 11:30: one more on the first.
      costs.push((await chat(alpha.key)).usage.cost, (await chat(alpha.key, 'demo/echo', 'a longer prompt this time')).usage.cost);
      costs.push((await chat(second.key)).usage.cost);
      clock.advance(HOUR + 25 * 60_000);
      costs.push((await chat(alpha.key)).usage.cost);
      // Day 2: one free request on alpha; beta spends too (never in alpha's reports).
      clock.set(DAY1 + DAY + 9 * HOUR);
      await chat(alpha.key, 'demo/echo:free');
      await chat(beta.key);
      await gw.ledger.flush();
    });
    afterAll(async () => {
      await gw.close();
      await drop();
    });

    it('lists accounts a page at a time, searchable by name (case-insensitive, wildcards taken literally)', async () => {
      await gw.admin.createAccount({ name: 'Acme Research' });
      await gw.admin.createAccount({ name: 'acme ops 100%' });
      await gw.admin.createAccount({ name: 'Zeta' });
      const all = await admin('/api/v1/admin/accounts?limit=200');
      expect(all.status).toBe(200);
      expect(all.body.total).toBe(5);
      expect(all.body.data.map((a: { id: string }) => a.id)).toContain(alpha.id);
      const acme = await admin('/api/v1/admin/accounts?search=ACME');
      expect(acme.body.data.map((a: { name: string }) => a.name).sort()).toEqual(['Acme Research', 'acme ops 100%']);
      expect(acme.body.total).toBe(2);
      expect((await admin('/api/v1/admin/accounts?search=100%25')).body.data.map((a: { name: string }) => a.name)).toEqual(['acme ops 100%']);
      expect((await admin('/api/v1/admin/accounts?search=_')).body.total).toBe(0);
      const page = await admin('/api/v1/admin/accounts?offset=1&limit=2');
      expect(page.body).toMatchObject({ offset: 1, limit: 2, total: 5 });
      expect(page.body.data).toHaveLength(2);
      expect(page.body.data[0].id).toBe(all.body.data[1].id);
      expect((await admin('/api/v1/admin/accounts?limit=0')).status).toBe(400);
      expect((await admin('/api/v1/admin/accounts?limit=0')).body.error.message).toMatch(/^limit: /);
      expect((await admin('/api/v1/admin/accounts?color=red')).body.error.message).toMatch(/unknown field "color"/);
    });

    it("lists an account's generations newest first, filtered by key, model, status and time, a page at a time", async () => {
      const all = await admin(`/api/v1/admin/accounts/${alpha.id}/generations`);
      expect(all.status).toBe(200);
      expect(all.body.data).toHaveLength(5);
      const times = all.body.data.map((g: { created_at: string }) => Date.parse(g.created_at));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?key=${second.hash}`)).body.data).toHaveLength(1);
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?model=demo/echo:free`)).body.data).toHaveLength(1);
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?status=completed`)).body.data).toHaveLength(5);
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?status=cancelled`)).body.data).toHaveLength(0);
      const day1 = await admin(`/api/v1/admin/accounts/${alpha.id}/generations?from=2026-11-20&to=2026-11-21`);
      expect(day1.body.data).toHaveLength(4);
      const hour11 = await admin(`/api/v1/admin/accounts/${alpha.id}/generations?from=2026-11-20T11:00:00Z&to=${DAY1 + 12 * HOUR}`);
      expect(hour11.body.data).toHaveLength(1);
      const page = await admin(`/api/v1/admin/accounts/${alpha.id}/generations?offset=1&limit=2`);
      expect(page.body.data.map((g: { id: string }) => g.id)).toEqual(all.body.data.slice(1, 3).map((g: { id: string }) => g.id));
      expect(all.body.data[0]).toMatchObject({ status: 'completed', model: 'demo/echo:free', provider: 'demo', key_hash: alpha.hash });
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?status=lost`)).status).toBe(400);
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?from=yesterday`)).body.error.message).toMatch(/^from: must be an ISO 8601/);
      expect((await admin('/api/v1/admin/accounts/acct_nobody/generations')).status).toBe(404);
    });

    it('reports spend by day and model, by hour and key, and their totals equal what the ledger charged', async () => {
      const byDay = await admin(`/api/v1/admin/reports/spend?from=2026-11-20&to=2026-11-22&account=${alpha.id}`);
      expect(byDay.status).toBe(200);
      expect(byDay.body).toMatchObject({ bucket: 'day', by: ['model'], from: '2026-11-20T00:00:00.000Z', to: '2026-11-22T00:00:00.000Z' });
      const day1 = costs.reduce((a, b) => a + b, 0);
      expect(byDay.body.data).toEqual([
        expect.objectContaining({ start: '2026-11-20T00:00:00.000Z', model: 'demo/echo', requests: 4 }),
        expect.objectContaining({ start: '2026-11-21T00:00:00.000Z', model: 'demo/echo:free', requests: 1, cost: 0 }),
      ]);
      expect(byDay.body.data[0].cost).toBeCloseTo(day1, 9);
      const account = await gw.admin.getAccount(alpha.id);
      const total = byDay.body.data.reduce((a: number, r: { cost: number }) => a + r.cost, 0);
      expect(Math.round(total * 1e9)).toBe(Math.round(account.total_usage * 1e9));

      const byHourKey = await admin(`/api/v1/admin/reports/spend?from=2026-11-20T10:00:00Z&to=2026-11-20T12:00:00Z&bucket=hour&by=key&account=${alpha.id}`);
      expect(byHourKey.body.data.map((r: { start: string; key: string; requests: number }) => [r.start.slice(11, 13), r.key, r.requests])).toEqual(
        [
          ['10', alpha.hash, 2],
          ['10', second.hash, 1],
          ['11', alpha.hash, 1],
        ].sort((a, b) => String(a[0]).localeCompare(String(b[0])) || String(a[1]).localeCompare(String(b[1]))),
      );
      // Across accounts: by account and provider, beta included.
      const everyone = await admin('/api/v1/admin/reports/spend?from=2026-11-20&to=2026-11-22&by=account,provider');
      expect(new Set(everyone.body.data.map((r: { account: string }) => r.account))).toEqual(new Set([alpha.id, beta.id]));
      expect(everyone.body.data.every((r: { provider: string }) => r.provider === 'demo')).toBe(true);
      expect((await admin('/api/v1/admin/reports/spend?by=color')).status).toBe(400);
      expect((await admin('/api/v1/admin/reports/spend?from=2026-11-22&to=2026-11-20')).body.error.message).toMatch(/^from: must be before to/);
      expect((await admin('/api/v1/admin/reports/spend?bucket=hour&from=2026-01-01&to=2026-11-20')).body.error.message).toMatch(/at most 31 days/);
    });

    it('a deleted key keeps its spend: reports still name it', async () => {
      expect((await gw.fetch(`/api/v1/admin/keys/${second.hash}`, { method: 'DELETE', token: ADMIN_TOKEN })).status).toBe(200);
      const byKey = await admin(`/api/v1/admin/reports/spend?from=2026-11-20&to=2026-11-22&by=key&account=${alpha.id}`);
      expect(byKey.body.data.map((r: { key: string }) => r.key)).toContain(second.hash);
      expect((await admin(`/api/v1/admin/accounts/${alpha.id}/generations?key=${second.hash}`)).body.data).toHaveLength(1);
    });

    it("gives a management key its account's activity through the SDK: per day, model and provider over the last 30 days", async () => {
      const sdk = (apiKey: string) => new OpenRouter({ serverURL: `${gw.base}/api/v1`, apiKey, retryConfig: { strategy: 'none' } });
      const { data } = await sdk(management).analytics.getUserActivity({});
      expect(data.map((r) => [r.date, r.model, r.providerName, r.requests])).toEqual([
        ['2026-11-20', 'demo/echo', 'demo', 4],
        ['2026-11-21', 'demo/echo:free', 'demo', 1],
      ]);
      expect(data[0]?.usage).toBeCloseTo(
        costs.reduce((a, b) => a + b, 0),
        9,
      );
      expect(data[0]).toMatchObject({ endpointId: 'demo/demo/echo', byokUsageInference: 0, reasoningTokens: 0 });
      expect(data[0]?.promptTokens).toBeGreaterThan(0);
      const oneDay = await sdk(management).analytics.getUserActivity({ date: '2026-11-21' });
      expect(oneDay.data.map((r) => r.model)).toEqual(['demo/echo:free']);
      const oneKey = await sdk(management).analytics.getUserActivity({ apiKeyHash: second.hash });
      expect(oneKey.data.map((r) => r.requests)).toEqual([1]);
      // Only management keys; a date outside the last 30 days is a 400.
      await expect(sdk(alpha.key).analytics.getUserActivity({})).rejects.toBeInstanceOf(errors.UnauthorizedResponseError);
      await expect(sdk(management).analytics.getUserActivity({ date: '2025-01-01' })).rejects.toBeInstanceOf(errors.BadRequestResponseError);
    });

    it('rollups match the generations they sum, after more charges in one commit', async () => {
      clock.set(DAY1 + DAY + 9 * HOUR + 30 * 60_000);
      await Promise.all([chat(beta.key), chat(beta.key), chat(beta.key)]);
      await gw.ledger.flush();
      const gens = await admin(`/api/v1/admin/accounts/${beta.id}/generations`);
      const spend = await admin(`/api/v1/admin/reports/spend?from=2026-11-21&to=2026-11-22&by=account&account=${beta.id}`);
      expect(spend.body.data).toHaveLength(1);
      expect(spend.body.data[0].requests).toBe(gens.body.data.length);
      const sum = gens.body.data.reduce((a: number, g: { total_cost: number }) => a + Math.round(g.total_cost * 1e9), 0);
      expect(Math.round(spend.body.data[0].cost * 1e9)).toBe(sum);
    });

    it('the migration that adds rollups fills them from the generations recorded before it', async () => {
      const fresh = await target.create();
      const db = openDatabase(fresh.url);
      try {
        await migrateUpTo(db, '0005');
        const gen = (id: string, at: number, cost: number) =>
          sql`INSERT INTO generations (id, account_id, key_hash, model, provider, tokens_prompt, tokens_completion, total_cost, byok_usage,
              is_byok, streamed, cancelled, finish_reason, created_at, latency_ms, usage_source)
            VALUES (${id}, 'acct_old', 'key_old', 'm', 'p', 10, 20, ${cost}, 0, 0, 0, 0, 'stop', ${at}, 5, 'upstream')`.execute(db);
        await gen('g1', DAY1 + 10 * HOUR + 1, 1000);
        await gen('g2', DAY1 + 10 * HOUR + 2, 2000);
        await gen('g3', DAY1 + 11 * HOUR, 4000);
        await migrateToLatest(db);
        const rows = await new KyselyLedger(db).spend({ from: DAY1, to: DAY1 + DAY, bucket: 'hour', by: ['key', 'model'], accountId: 'acct_old' });
        expect(rows.map((r) => [r.start, r.requests, r.cost, r.promptTokens, r.completionTokens, r.group])).toEqual([
          [DAY1 + 10 * HOUR, 2, 3000n, 20, 40, { key: 'key_old', model: 'm' }],
          [DAY1 + 11 * HOUR, 1, 4000n, 10, 20, { key: 'key_old', model: 'm' }],
        ]);
      } finally {
        await db.destroy();
        await fresh.drop();
      }
    });
  });
}
