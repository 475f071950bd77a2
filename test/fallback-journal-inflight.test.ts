import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { FileChargeJournal } from '../src/ledger/file-charge-journal.js';
import { KyselyLedger } from '../src/ledger/kysely-ledger.js';
import { migrateToLatest } from '../src/ledger/migrations.js';
import { chargeMaker } from './helpers/charges.js';
import { databaseTargets } from './helpers/database.js';

const T0 = Date.UTC(2026, 10, 18, 10);
const charge = chargeMaker('fallback-inflight', T0);
const pgTarget = databaseTargets.find((t) => t.name === 'postgres');
const segments = (dir: string) => {
  try {
    return readdirSync(dir).filter((n) => n.endsWith('.jsonl'));
  } catch {
    return [];
  }
};

describe.skipIf(!pgTarget)('PostgreSQL fallback journal: a charge journaled while its commit is in flight', () => {
  let created: { url: string; drop(): Promise<void> };
  let db: ReturnType<typeof openDatabase>;
  beforeAll(async () => {
    created = await (pgTarget as NonNullable<typeof pgTarget>).create();
    db = openDatabase(created.url);
    await migrateToLatest(db);
  });
  afterAll(async () => {
    await db.destroy().catch(() => undefined);
    await created.drop();
  });

  it('the commit that then lands lets its journal entry go: no segment is left for the next start to apply again', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tollgate-fallback-'));
    const setup = new KyselyLedger(db);
    const a = await setup.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });
    await setup.createKey({
      hash: 'h-inflight',
      accountId: a.id,
      name: 'k',
      label: 'l',
      limit: null,
      limitReset: null,
      includeByokInLimit: false,
      expiresAt: null,
      createdAt: T0,
    });
    const locker = new pg.Client({ connectionString: created.url });
    await locker.connect();
    const ledger = new KyselyLedger(openDatabase(created.url), { durableWaitMs: 50, retryDelayMs: 60_000, fallbackJournal: new FileChargeJournal(dir) });
    try {
      // Another transaction holds the account's row: the group commit is sent and waits on it (in flight).
      await locker.query('BEGIN');
      await locker.query('SELECT * FROM accounts WHERE id = $1 FOR UPDATE', [a.id]);
      const written = ledger.charge(charge(a.id, 'h-inflight', 7n));
      // Past the bounded wait the in-flight charge is journaled (durable) and the answer goes.
      expect(await ledger.awaitDurable(written)).toBe(true);
      expect(segments(dir).length).toBe(1);
      // The commit in flight lands.
      await locker.query('COMMIT');
      await ledger.flush();
      expect((await setup.getAccount(a.id))?.totalUsage).toBe(7n);
      await ledger.close();
      // Every charge of the segment is in the tables: it should be gone.
      expect(segments(dir)).toEqual([]);
    } finally {
      await locker.end().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
