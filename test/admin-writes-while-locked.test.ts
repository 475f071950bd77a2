import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN } from './helpers/gateway.js';
import { gatewayOnSqliteFile, whileWriteLocked } from './helpers/sqlite-lock.js';

describe('admin writes while another connection holds the write lock', () => {
  it('each is a 503 ledger_unavailable with Retry-After, and the handle is usable afterwards', { timeout: 60_000 }, async () => {
    const { gw, path: db } = await gatewayOnSqliteFile();
    try {
      const acct = await gw.account(10);
      const admin = (path: string, init: { method?: string; body?: unknown } = {}) => gw.fetch(`/api/v1/admin${path}`, { ...init, token: ADMIN_TOKEN });
      const answers: Array<{ what: string; status: number; retry: string | null; body: string }> = [];
      await whileWriteLocked(db, async () => {
        const calls: Array<[string, () => Promise<Response>]> = [
          ['credits', () => admin(`/accounts/${acct.id}/credits`, { method: 'POST', body: { amount: 1 } })],
          ['create account', () => admin('/accounts', { method: 'POST', body: { name: 'x' } })],
          ['create key', () => admin(`/accounts/${acct.id}/keys`, { method: 'POST', body: { name: 'k' } })],
          ['patch key', () => admin(`/keys/${acct.hash}`, { method: 'PATCH', body: { name: 'renamed' } })],
          ['rotate key', () => admin(`/keys/${acct.hash}/rotate`, { method: 'POST', body: {} })],
          ['put byok', () => admin(`/accounts/${acct.id}/byok/demo`, { method: 'PUT', body: { api_key: 'sk-test-123' } })],
        ];
        for (const [what, call] of calls) {
          const r = await call();
          answers.push({ what, status: r.status, retry: r.headers.get('retry-after'), body: await r.text() });
        }
      });
      for (const a of answers) {
        expect(a.status, JSON.stringify(a)).toBe(503);
        expect(a.retry, JSON.stringify(a)).not.toBeNull();
        expect(a.body, JSON.stringify(a)).toContain('ledger_unavailable');
      }
      // The handle is not left inside a transaction: a credit now lands, and is seen by a new connection.
      const r = await admin(`/accounts/${acct.id}/credits`, { method: 'POST', body: { amount: 1 } });
      expect(r.status).toBe(200);
      const check = new BetterSqlite3(db, { readonly: true });
      const row = check.prepare('select count(*) as n from credit_entries where account_id = ?').get(acct.id) as { n: number };
      check.close();
      expect(row.n).toBe(2);
    } finally {
      await gw.close();
    }
  });
});
