import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { migrateToLatest } from '../src/ledger/migrations.js';

// Several processes may share one SQLite ledger (docs/charging.md: "Every start (`serve` and the
// CLI's verbs) applies what other processes left"), so two of them may start at once on a fresh data
// folder (a `serve` and a provisioning script's `tollgate accounts create`). Kysely takes no lock on
// SQLite: both ran the same migrations and one failed ("table accounts already exists"). They take
// turns on a lock file beside the database (migrations.ts), here two starts in one process.
describe('two starts at once on one fresh SQLite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tg-sqlite-first-start-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('both bring the schema up to date; neither fails with "database migration … failed"', async () => {
    const failures: string[] = [];
    for (let round = 0; round < 5; round++) {
      const url = `sqlite:${join(dir, `round-${round}.db`)}`;
      const dbs = [openDatabase(url), openDatabase(url)];
      const results = await Promise.allSettled(dbs.map((db) => migrateToLatest(db)));
      for (const r of results) if (r.status === 'rejected') failures.push((r.reason as Error).message);
      await Promise.all(dbs.map((db) => db.destroy()));
    }
    expect(failures).toEqual([]);
  });
});
