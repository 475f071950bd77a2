import { describe, expect, it } from 'vitest';
import { gatewayOnSqliteFile, whileWriteLocked } from './helpers/sqlite-lock.js';

// The SQLite ledger's file is write-locked by another connection for a while (an operator's sqlite3
// shell inside BEGIN, a maintenance script, a second process's long transaction). Charges keep going
// to the journal; applying them to the tables runs synchronously on the event loop (better-sqlite3).
// With the start's busy_timeout of 5 s it waited there at every try (once a second), and the process
// answered nothing meanwhile: not /health (CONTRACT §8: "GET /health is liveness (the process
// answers)"), not any request, not a running stream. Serving, a write waits SQLITE_BUSY_MS.serving.
describe('SQLite: the database file write-locked by another connection', () => {
  it('the gateway keeps answering /health within a second', { timeout: 60_000 }, async () => {
    const { gw, path } = await gatewayOnSqliteFile();
    try {
      const acct = await gw.account(10);
      const slowest: Array<{ what: string; ms: number }> = [];
      const cost = await whileWriteLocked(path, async () => {
        // One paid request: its charge is journaled, and applying it to the tables meets the lock.
        const r = await gw.fetch('/api/v1/chat/completions', {
          token: acct.key,
          body: { model: 'demo/echo', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
        });
        const answer = (await r.json()) as { usage: { cost: number } };
        const until = Date.now() + 3_000;
        while (Date.now() < until) {
          const s = Date.now();
          const h = await gw.fetch('/health');
          await h.text();
          slowest.push({ what: `/health ${h.status}`, ms: Date.now() - s });
        }
        return answer.usage.cost;
      });
      const worst = slowest.reduce((a, b) => (b.ms > a.ms ? b : a));
      expect(worst.ms, JSON.stringify(worst)).toBeLessThan(1_000);
      // Once the lock is gone the charge reaches the tables (its retry comes within a second), once.
      expect(cost).toBeGreaterThan(0);
      let usage = 0;
      for (const until = Date.now() + 5_000; usage === 0 && Date.now() < until;) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        usage = (await gw.admin.getAccount(acct.id)).total_usage;
      }
      expect(usage).toBe(cost);
    } finally {
      await gw.close();
    }
  });
});
