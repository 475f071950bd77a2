import fc from 'fast-check';
import { Kysely, PostgresDialect, sql, type DatabaseConnection, type Dialect } from 'kysely';
import pg from 'pg';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/ledger/database.js';
import { APPLY_BATCH, KyselyLedger, leftoverDelay } from '../src/ledger/kysely-ledger.js';
import type { LedgerUpdate } from '../src/ledger/ledger.js';
import { migrateToLatest, migrations } from '../src/ledger/migrations.js';
import { postgresCommitWriter } from '../src/ledger/postgres-commit-writer.js';
import { journalTableRows } from '../src/ledger/journal-table-rows.js';
import { journalEntryCharges, journalEntryText } from '../src/ledger/journal-entry-text.js';
import { FileChargeJournal, MemoryChargeJournal } from '../src/ledger/file-charge-journal.js';
import type { JournalSegment } from '../src/ledger/charge-journal.js';
import { sqliteCommitWriter } from '../src/ledger/sqlite-commit-writer.js';
import { writeCommit } from '../src/ledger/write-commit.js';
import { creditsFromString, formatCredits } from '../src/ledger/money.js';
import { chargeMaker } from './helpers/charges.js';
import { databaseTargets, migrateUpTo } from './helpers/database.js';
import type { Database } from '../src/ledger/schema.js';

const T0 = Date.UTC(2026, 10, 18, 10); // Wednesday 18 Nov 2026

const charge = chargeMaker('test', T0);

/** The ids of the charges in the journal table earlier versions wrote, row by row (SQLite). */
async function journaledIds(db: Kysely<Database>): Promise<string[]> {
  const rows = await db.selectFrom('charge_journal').select('charges').orderBy('seq').execute();
  return rows.flatMap((r) => journalEntryCharges(r.charges).map((c) => c.id));
}

/** A journal that refuses appends while `broken` (the disk full, say). */
class BreakableJournal extends MemoryChargeJournal {
  broken = false;

  override append(): JournalSegment {
    if (this.broken) throw new Error('the journal refuses');
    return super.append();
  }
}

/** The journal segments in `dir`, oldest first. */
function segmentsIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((n) => n.endsWith('.jsonl'))
      .sort();
  } catch {
    return [];
  }
}

const HOUR = 3_600_000;

/**
 * A dialect whose COMMIT lands and then fails, `lost.left` times: a COMMIT whose answer was lost (the
 * connection dropped just after the server committed). On PostgreSQL a group commit is one statement
 * without BEGIN and COMMIT: that statement's answer is the one lost.
 */
function losingCommitAnswers(inner: Dialect, lost: { left: number }): Dialect {
  const lose = () => {
    if (lost.left <= 0) return;
    lost.left -= 1;
    throw new Error('Connection terminated unexpectedly');
  };
  const losingConnection = (connection: DatabaseConnection): DatabaseConnection => ({
    executeQuery: async (query) => {
      const result = await connection.executeQuery(query);
      if (query.sql.includes('INSERT INTO generations') && query.sql.startsWith('WITH')) lose();
      return result as never;
    },
    streamQuery: (query, chunkSize) => connection.streamQuery(query, chunkSize),
  });
  return {
    createAdapter: () => inner.createAdapter(),
    createQueryCompiler: () => inner.createQueryCompiler(),
    createIntrospector: (db) => inner.createIntrospector(db),
    createDriver: () => {
      const driver = inner.createDriver();
      const given = new WeakMap<DatabaseConnection, DatabaseConnection>(); // the driver's connection → the one handed out
      const original = new WeakMap<object, DatabaseConnection>(); // and back
      const unwrap = (a: unknown) => (typeof a === 'object' && a !== null ? (original.get(a) ?? a) : a);
      return new Proxy(driver, {
        get(target, prop) {
          if (prop === 'acquireConnection') {
            return async () => {
              const c = await target.acquireConnection();
              let w = given.get(c);
              if (!w) {
                w = losingConnection(c);
                given.set(c, w);
                original.set(w, c);
              }
              return w;
            };
          }
          if (prop === 'commitTransaction') {
            return async (c: DatabaseConnection) => {
              await target.commitTransaction(unwrap(c) as DatabaseConnection);
              lose();
            };
          }
          const value = Reflect.get(target, prop, target) as unknown;
          if (typeof value !== 'function') return value;
          // Whatever else the driver does to a connection (begin, rollback, release), it does to its own.
          return (...args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args.map(unwrap));
        },
      });
    },
  };
}

// One suite, run over every ledger backend (SQLite always, PostgreSQL when DATABASE_URL is set).
for (const target of databaseTargets) {
  describe(`ledger on ${target.name}`, () => {
    let ledger: KyselyLedger;
    let drop: () => Promise<void>;
    let db: ReturnType<typeof openDatabase>;
    let url: string;

    beforeAll(async () => {
      const created = await target.create();
      drop = created.drop;
      url = created.url;
      db = openDatabase(created.url);
      await migrateToLatest(db);
      await migrateToLatest(db); // idempotent
      ledger = new KyselyLedger(db);
    });
    afterAll(async () => {
      await ledger.close();
      await drop();
    });

    const newAccount = () => ledger.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });
    const newKey = (accountId: string, hash: string) =>
      ledger.createKey({
        hash,
        accountId,
        name: 'k',
        label: 'sk-tg-v1-abc...xyz',
        limit: null,
        limitReset: null,
        includeByokInLimit: false,
        expiresAt: null,
        createdAt: T0,
      });

    const newKeyOn = (l: KyselyLedger, accountId: string, hash: string) =>
      l.createKey({ hash, accountId, name: 'k', label: 'l', limit: null, limitReset: null, includeByokInLimit: false, expiresAt: null, createdAt: T0 });

    /**
     * Two handles on one fresh SQLite file, as two processes have: `first`, whose ledger (`stopped`, with
     * an account and the key `hash`) stops, and `next`, the next start. The file goes afterwards.
     */
    const onOneFile = async (
      hash: string,
      run: (s: {
        first: Kysely<Database>;
        next: Kysely<Database>;
        stopped: KyselyLedger;
        accountId: string;
        /** Where the journal files are. */
        journalDir: string;
        /** A journal for a start an hour later (the stopped process's files are final by then, and go once applied). */
        later: () => FileChargeJournal;
      }) => Promise<void>,
      options: ConstructorParameters<typeof KyselyLedger>[1] = {},
    ) => {
      const dir = mkdtempSync(join(tmpdir(), 'tollgate-journal-'));
      const file = `sqlite:${join(dir, 'ledger.db')}`;
      const first = openDatabase(file);
      const next = openDatabase(file);
      try {
        await migrateToLatest(first);
        const stopped = new KyselyLedger(first, { retryDelayMs: 60_000, ...options });
        const a = await stopped.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });
        await newKeyOn(stopped, a.id, hash);
        const journalDir = `${join(dir, 'ledger.db')}-charges`;
        await run({ first, next, stopped, accountId: a.id, journalDir, later: () => new FileChargeJournal(journalDir, { now: () => Date.now() + HOUR }) });
      } finally {
        await first.destroy().catch(() => undefined);
        await next.destroy();
        rmSync(dir, { recursive: true, force: true });
      }
    };

    // The database refusing every charge: the generations table gone and, on SQLite, the charge journal
    // refusing too (with the tables alone refusing, charges would still be made durable, in the journal).
    const failing = ['generations'];
    const journal = new BreakableJournal();
    const breakCharges = async () => {
      for (const t of failing) await sql.raw(`ALTER TABLE ${t} RENAME TO ${t}_off`).execute(db);
      journal.broken = true;
    };
    const repairCharges = async () => {
      for (const t of failing) await sql.raw(`ALTER TABLE ${t}_off RENAME TO ${t}`).execute(db);
      journal.broken = false;
    };
    /** Puts back what is still renamed (a test may have failed before its own repair). */
    const restoreCharges = async () => {
      for (const t of failing)
        await sql
          .raw(`ALTER TABLE ${t}_off RENAME TO ${t}`)
          .execute(db)
          .catch(() => undefined);
      journal.broken = false;
    };

    it('a charge counts in the hour and the key periods its request ended in, on either dialect', async () => {
      const a = await newAccount();
      const hash = `h-ended-${target.name}`;
      await newKey(a.id, hash);
      const started = Date.UTC(2026, 10, 18, 23, 59, 0); // Wednesday 23:59 UTC
      const c = { ...charge(a.id, hash, 3n), createdAt: started, latencyMs: 65_000 }; // ended Thursday 00:00:05
      await ledger.charge(c);
      await ledger.flush();
      const hours = await db.selectFrom('spend_hourly').select('bucket').where('key_hash', '=', hash).execute();
      expect(hours.map((h) => Number(h.bucket))).toEqual([Date.UTC(2026, 10, 19, 0)]);
      const periods = await db.selectFrom('key_usage').select(['period', 'usage']).where('key_hash', '=', hash).orderBy('period').execute();
      expect(periods.map((p) => p.period)).toEqual(['all', 'd:2026-11-19', 'm:2026-11', 'w:2026-11-16']);
      expect((await ledger.getGeneration(c.id))?.createdAt).toBe(started); // the generation keeps its start
    });

    it("keeps amounts beyond a double's precision exact", async () => {
      const a = await newAccount();
      const big = creditsFromString('999999999.123456789');
      await ledger.addCredits(a.id, big, 'purchase', T0);
      await ledger.addCredits(a.id, creditsFromString('-0.000000001'), 'adjustment', T0);
      const got = await ledger.getAccount(a.id);
      expect(formatCredits(got?.balance ?? 0n)).toBe('999999999.123456788');
      expect(formatCredits(got?.totalPurchased ?? 0n)).toBe('999999999.123456789');
    });

    it('reads are what is committed (the limits store adds what is queued); a queued generation is found', async () => {
      const a = await newAccount();
      await ledger.addCredits(a.id, 1000n, 'purchase', T0);
      await newKey(a.id, `h-pending-${target.name}`);
      const c = charge(a.id, `h-pending-${target.name}`, 70n);
      const written = ledger.charge(c);
      const queued = await ledger.getAccount(a.id);
      expect(queued).toMatchObject({ balance: 1000n, totalUsage: 0n });
      expect((await ledger.keyUsage(`h-pending-${target.name}`, T0)).daily.usage).toBe(0n);
      expect((await ledger.getGeneration(c.id))?.totalCost).toBe(70n);
      await written;
      expect(await ledger.getAccount(a.id)).toMatchObject({ balance: 930n, totalUsage: 70n });
      expect((await ledger.keyUsage(`h-pending-${target.name}`, T0)).daily.usage).toBe(70n);
    });

    it('issue 9: a charge writes generations through its key and one index by account, which the account’s listing uses', async () => {
      const indexes =
        target.name === 'sqlite'
          ? await sql<{ name: string }>`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'generations' AND sql IS NOT NULL`.execute(db)
          : await sql<{ name: string }>`SELECT indexname AS name FROM pg_indexes WHERE tablename = 'generations' AND indexname <> 'generations_pkey'`.execute(
              db,
            );
      expect(indexes.rows.map((r) => r.name)).toEqual(['generations_account_created']);
      if (target.name === 'sqlite') {
        const plan = await sql<{
          detail: string;
        }>`EXPLAIN QUERY PLAN SELECT * FROM generations WHERE account_id = ${'a'} ORDER BY created_at DESC, id DESC LIMIT 20`.execute(db);
        expect(plan.rows.map((r) => r.detail).join('\n')).toContain('USING INDEX generations_account_created');
      }
    });

    it('issue 7 item 3: a generation keeps where its token counts came from (usage_source)', async () => {
      const a = await newAccount();
      await ledger.addCredits(a.id, 1000n, 'purchase', T0);
      await newKey(a.id, `h-source-${target.name}`);
      const counted = charge(a.id, `h-source-${target.name}`, 5n, T0, { usageSource: 'counted' });
      const upstream = charge(a.id, `h-source-${target.name}`, 5n);
      await Promise.all([ledger.charge(counted), ledger.charge(upstream)]);
      await ledger.flush();
      const fresh = new KyselyLedger(db); // reads what was written, not what this process queued
      expect((await fresh.getGeneration(counted.id))?.usageSource).toBe('counted');
      expect((await fresh.getGeneration(upstream.id))?.usageSource).toBe('upstream');
    });

    it('records every field of a generation as charged: any text (quotes, braces, commas, backslashes, "NULL"), nulls, money beyond a double', async () => {
      const a = await newAccount();
      const hash = `h-fields-${target.name}`;
      await newKey(a.id, hash);
      const huge = 2n ** 62n + 12_345n; // far past 2^53: a float would round it
      await ledger.addCredits(a.id, huge, 'adjustment', T0);
      const odd = charge(a.id, hash, huge - 1n, T0, {
        model: 'we"ird\\model,{x}',
        provider: 'NULL',
        finishReason: null,
        usageSource: null,
        byokUsage: 2n ** 60n + 1n,
        isByok: true,
        streamed: true,
        cancelled: true,
        tokensPrompt: 2_000_000_000,
        latencyMs: 0,
      });
      const plain = charge(a.id, hash, 1n, T0 + 1, { finishReason: 'length' });
      await Promise.all([ledger.charge(odd), ledger.charge(plain)]);
      await ledger.flush(); // into the tables (on SQLite the charges were durable in the journal first)
      const fresh = new KyselyLedger(db); // reads what was written, not what this process queued
      expect(await fresh.getGeneration(odd.id)).toEqual(odd);
      expect(await fresh.getGeneration(plain.id)).toEqual(plain);
      expect(await fresh.getAccount(a.id)).toMatchObject({ balance: 0n, totalUsage: huge });
      expect((await fresh.keyUsage(hash, T0)).daily).toEqual({ usage: huge, byokUsage: 2n ** 60n + 1n });
    });

    it("charges a generation whose finish reason (the upstream's text) holds a NUL or a lone surrogate, each stored as U+FFFD", async () => {
      const a = await newAccount();
      const hash = `h-odd-text-${target.name}`;
      await newKey(a.id, hash);
      await ledger.addCredits(a.id, 10n, 'adjustment', T0);
      const odd = charge(a.id, hash, 3n, T0, { finishReason: 'st\u0000op \ud800 \udfff 😀' });
      await ledger.charge(odd);
      await ledger.flush();
      const fresh = new KyselyLedger(db);
      const stored = await fresh.getGeneration(odd.id);
      expect(stored?.finishReason).toBe('st\ufffdop \ufffd \ufffd 😀');
      expect(await fresh.getAccount(a.id)).toMatchObject({ balance: 7n, totalUsage: 3n });
    });

    it('charges each generation once, however often it is queued', async () => {
      const a = await newAccount();
      await ledger.addCredits(a.id, creditsFromString('1'), 'purchase', T0);
      await newKey(a.id, `h-once-${target.name}`);
      const c = charge(a.id, `h-once-${target.name}`, 1234n);
      ledger.charge(c);
      ledger.charge({ ...c }); // the same generation again, while the first waits to be written
      await ledger.flush();
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(1234n);
      ledger.charge(c);
      await ledger.flush();
      const got = await ledger.getAccount(a.id);
      expect(got?.totalUsage).toBe(1234n);
      expect(got?.balance).toBe(1_000_000_000n - 1234n);
    });

    it('a commit handed the same generation twice records and charges it once', async () => {
      const a = await newAccount();
      const hash = `h-twice-${target.name}`;
      await newKey(a.id, hash);
      const c = charge(a.id, hash, 40n);
      const writer = target.name === 'postgres' ? postgresCommitWriter : sqliteCommitWriter;
      const [update] = await writeCommit(db, writer, [c, { ...c }]);
      expect(update).toMatchObject({ accountId: a.id, committed: [c.id], account: { totalUsage: 40n } });
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(40n);
      expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(40n);
    });

    it.runIf(target.name === 'postgres')(
      'issue 9: the group commit is prepared once a connection (a named statement), not parsed and planned every time',
      async () => {
        const a = await newAccount();
        const hash = `h-named-${target.name}`;
        await newKey(a.id, hash);
        await db.connection().execute(async (conn) => {
          await writeCommit(conn, postgresCommitWriter, [charge(a.id, hash, 3n)]);
          await writeCommit(conn, postgresCommitWriter, [charge(a.id, hash, 4n)]);
          const prepared = await sql<{ name: string; statement: string }>`SELECT name, statement FROM pg_prepared_statements`.execute(conn);
          const commits = prepared.rows.filter((r) => r.statement.includes('INSERT INTO generations'));
          expect(commits).toHaveLength(1);
          expect(commits[0]?.name).toMatch(/^tg_[0-9a-f]{24}$/);
        });
        expect((await ledger.getAccount(a.id))?.totalUsage).toBe(7n);
      },
    );

    it('splits key usage into UTC day, Monday week and calendar month', async () => {
      const a = await newAccount();
      const hash = `h-periods-${target.name}`;
      await newKey(a.id, hash);
      const day = 86_400_000;
      ledger.charge(charge(a.id, hash, 100n, T0)); // Wed 18 Nov
      ledger.charge(charge(a.id, hash, 10n, T0 - 2 * day)); // Mon 16 Nov: same week, same month
      ledger.charge(charge(a.id, hash, 1n, T0 - 3 * day)); // Sun 15 Nov: previous week
      ledger.charge(charge(a.id, hash, 1000n, Date.UTC(2026, 9, 31, 23, 59))); // 31 Oct: previous month
      ledger.charge(charge(a.id, hash, 7n, T0, { isByok: true, byokUsage: 140n }));
      await ledger.flush();
      const u = await ledger.keyUsage(hash, T0);
      expect(u.daily).toEqual({ usage: 107n, byokUsage: 140n });
      expect(u.weekly).toEqual({ usage: 117n, byokUsage: 140n });
      expect(u.monthly).toEqual({ usage: 118n, byokUsage: 140n });
      expect(u.all).toEqual({ usage: 1118n, byokUsage: 140n });
      // The next UTC day starts a new daily period.
      expect((await ledger.keyUsage(hash, Date.UTC(2026, 10, 19, 0, 0))).daily.usage).toBe(0n);
    });

    it('balance equals credits minus charges to the last nanocredit over thousands of small charges', async () => {
      const a = await newAccount();
      const hash = `h-many-${target.name}`;
      await newKey(a.id, hash);
      await ledger.addCredits(a.id, creditsFromString('3'), 'purchase', T0);
      await fc.assert(
        fc.asyncProperty(fc.array(fc.bigInt({ min: 1n, max: 5_000n }), { minLength: 1, maxLength: 300 }), async (costs) => {
          const before = (await ledger.getAccount(a.id))!;
          costs.forEach((c) => ledger.charge(charge(a.id, hash, c)));
          await ledger.flush();
          const after = (await ledger.getAccount(a.id))!;
          const sum = costs.reduce((x, y) => x + y, 0n);
          expect(before.balance - after.balance).toBe(sum);
          expect(after.totalUsage - before.totalUsage).toBe(sum);
        }),
        { numRuns: 15 },
      );
      const acct = (await ledger.getAccount(a.id))!;
      await ledger.flush(); // the queries below read the tables straight, not through the ledger
      expect((await ledger.getAccount(a.id))!.balance).toBe(acct.balance);
      const rows = await db
        .selectFrom('generations')
        .select(sql<string>`sum(total_cost)`.as('s'))
        .where('account_id', '=', a.id)
        .executeTakeFirst();
      expect(acct.balance).toBe(3_000_000_000n - BigInt(String(rows?.s)));
      expect(acct.totalUsage).toBe(BigInt(String(rows?.s)));
    });

    it('tells what each commit did to an account: its new balance and commit sequence, the key usage it wrote, the generations it recorded', async () => {
      const seen: LedgerUpdate[] = [];
      const reporting = new KyselyLedger(db, { onCommitted: (u) => seen.push(...u) });
      const a = await newAccount();
      await newKey(a.id, `h-seq-${target.name}`);
      await reporting.addCredits(a.id, 5_000_000_000n, 'purchase', T0);
      const before = await reporting.moneySnapshot(a.id, { hash: `h-seq-${target.name}`, periods: ['all', 'd:2099-01-01'] });
      const [c1, c2] = [charge(a.id, `h-seq-${target.name}`, 300n), charge(a.id, `h-seq-${target.name}`, 200n)];
      await Promise.all([reporting.charge(c1), reporting.charge(c2)]);
      await reporting.flush(); // into the tables (on SQLite the charges were durable in the journal first)
      const commit = seen.at(-1) as LedgerUpdate;
      expect([...(commit.committed ?? [])].sort()).toEqual([c1.id, c2.id].sort());
      expect(commit.account?.balance).toBe(5_000_000_000n - 500n);
      expect(commit.account?.seq).toBe((before?.account?.seq ?? 0n) + 1n);
      expect(commit.keys?.[0]?.periods.find((p) => p.period === 'all')).toMatchObject({ usage: 500n, seq: commit.account?.seq });
      // A fresh read says the same, stamped with the same sequence number; a period never charged reads as zero.
      const after = await reporting.moneySnapshot(a.id, { hash: `h-seq-${target.name}`, periods: ['all', 'd:2099-01-01'] });
      expect(after?.account).toEqual(commit.account);
      expect(after?.keys?.[0]?.periods).toEqual([
        { seq: commit.account?.seq, period: 'all', usage: 500n, byokUsage: 0n },
        { seq: commit.account?.seq, period: 'd:2099-01-01', usage: 0n, byokUsage: 0n },
      ]);
      expect(seen[0]?.account?.balance).toBe(5_000_000_000n); // the credit entry was reported too
      expect(await reporting.moneySnapshot('acct_missing')).toBeUndefined();
    });

    it('a lone charge is committed at once; while commits carry several, one starts at most every commitIntervalMs', async () => {
      const a = await newAccount();
      const hash = `h-pace-${target.name}`;
      await newKey(a.id, hash);
      const commits: string[][] = [];
      const paced = new KyselyLedger(db, { commitIntervalMs: 300, onGroupCommit: (ids) => commits.push(ids) });
      const c = Array.from({ length: 5 }, () => charge(a.id, hash, 1n));
      let t = performance.now();
      await paced.charge(c[0]!);
      expect(performance.now() - t).toBeLessThan(200); // alone: not held back
      t = performance.now();
      await Promise.all([paced.charge(c[1]!), paced.charge(c[2]!)]); // the last commit carried one: at once
      expect(performance.now() - t).toBeLessThan(200);
      t = performance.now();
      const later = [paced.charge(c[3]!)]; // the last commit carried two: this one waits for the interval
      await new Promise((resolve) => setTimeout(resolve, 50));
      later.push(paced.charge(c[4]!)); // and takes this one along
      await Promise.all(later);
      expect(performance.now() - t).toBeGreaterThanOrEqual(200);
      expect(commits.map((ids) => ids.sort())).toEqual([[c[0]!.id], [c[1]!.id, c[2]!.id].sort(), [c[3]!.id, c[4]!.id].sort()]);
      await paced.flush();
    });

    it('issue 9: while each event-loop turn brings more charges, a commit waits for them, a few turns at most; a lone charge goes at the end of its turn', async () => {
      const a = await newAccount();
      const hash = `h-gather-${target.name}`;
      await newKey(a.id, hash);
      const commits: string[][] = [];
      const gathering = new KyselyLedger(db, { commitIntervalMs: 0, onGroupCommit: (ids) => commits.push(ids) });
      const turn = () => new Promise((resolve) => setImmediate(resolve));
      const c = Array.from({ length: 14 }, () => charge(a.id, hash, 1n));
      await gathering.charge(c[0]!); // alone in its turn: written then
      expect(commits).toEqual([[c[0]!.id]]);
      // Requests ending together: two in one turn, one more the turn after: one commit.
      const burst = [gathering.charge(c[1]!), gathering.charge(c[2]!)];
      await turn();
      burst.push(gathering.charge(c[3]!));
      await Promise.all(burst);
      expect(commits.slice(1).map((ids) => ids.sort())).toEqual([[c[1]!.id, c[2]!.id, c[3]!.id].sort()]);
      // A charge every turn without end does not hold the commit back without end.
      commits.length = 0;
      const steady: Array<Promise<void>> = [];
      for (const ch of c.slice(4)) {
        steady.push(gathering.charge(ch));
        await turn();
      }
      await Promise.all(steady);
      expect(commits.length).toBeGreaterThan(1);
      expect(commits.flat().sort()).toEqual(
        c
          .slice(4)
          .map((ch) => ch.id)
          .sort(),
      );
      await gathering.flush();
    });

    it('sets aside a charge the database refuses, without holding back the others', async () => {
      const a = await newAccount();
      const hash = `h-poison-${target.name}`;
      await newKey(a.id, hash);
      const rejected: string[] = [];
      const guarded = new KyselyLedger(db, { onChargeRejected: (_e, c) => rejected.push(c.id), retryDelayMs: 60_000 });
      const poison = charge(a.id, hash, 2n ** 64n); // cannot fit a BIGINT column
      const writes = [guarded.charge(poison)];
      // Traffic goes on: each round writes two good charges beside the refused one (which a flush may also
      // try alone: each try counts, the fifth sets it aside).
      let rounds = 0;
      for (; rounds < 6 && rejected.length === 0; rounds++) {
        writes.push(guarded.charge(charge(a.id, hash, 3n)), guarded.charge(charge(a.id, hash, 4n)));
        await guarded.flush().catch(() => undefined);
      }
      await Promise.all(writes); // every charge is settled one way or the other: nothing waits forever
      expect(rejected).toEqual([poison.id]);
      // Five tries, at most two a flush (the journaled ledger applies before and after its commit).
      expect(rounds).toBeGreaterThanOrEqual(3);
      expect(rounds).toBeLessThanOrEqual(5);
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(7n * BigInt(rounds)); // every good charge, none held back
      expect(await ledger.getGeneration(poison.id)).toBeUndefined();
      // Set aside for good (logged for replay by onChargeRejected): no later start applies it.
      expect(await new KyselyLedger(db).recoverJournal()).toBe(0);
    });

    it('sets aside a lone charge that no column can hold, with no traffic beside it, naming what does not fit', async () => {
      const a = await newAccount();
      const hash = `h-lone-poison-${target.name}`;
      await newKey(a.id, hash);
      const rejected: string[] = [];
      const why: string[] = [];
      const guarded = new KyselyLedger(db, {
        onChargeRejected: (e, c) => {
          rejected.push(c.id);
          why.push(String((e as Error).message));
        },
        retryDelayMs: 60_000,
      });
      const poison = charge(a.id, hash, 2n ** 64n); // cannot fit a BIGINT column
      const written = guarded.charge(poison);
      // Nothing else is written meanwhile: each flush tries the charge alone again. The first try does not
      // set it aside; the fifth does (a flush of the journaled ledger tries twice).
      await guarded.flush().catch(() => undefined);
      expect(rejected).toEqual([]);
      let flushes = 1;
      while (rejected.length === 0 && flushes < 10) {
        flushes += 1;
        await guarded.flush().catch(() => undefined);
      }
      expect(rejected).toEqual([poison.id]);
      expect(why).toEqual([`generation ${poison.id}: total_cost ${2n ** 64n} is outside a 64-bit integer`]);
      expect(flushes).toBeGreaterThanOrEqual(3);
      expect(flushes).toBeLessThanOrEqual(5);
      await written; // settled: nothing waits for it any more
      expect(await ledger.getGeneration(poison.id)).toBeUndefined();
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(0n);
      expect(await db.selectFrom('spend_hourly').select('bucket').where('key_hash', '=', hash).execute()).toEqual([]);
      expect(await db.selectFrom('key_usage').select('period').where('key_hash', '=', hash).execute()).toEqual([]);
      // Set aside for good (logged for replay by onChargeRejected): no later start applies it.
      expect(await new KyselyLedger(db).recoverJournal()).toBe(0);
      // And the ledger goes on writing.
      const next = charge(a.id, hash, 7n);
      await Promise.all([guarded.charge(next), guarded.flush()]);
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(7n);
    });

    /** A rule of the tables that refuses every paid charge of the key `hash` (a constraint: what an operator's own rule would raise). */
    const refuseKey = async (hash: string) => {
      if (target.name === 'sqlite')
        await sql`CREATE TRIGGER ${sql.id(`refuse_${hash}`)} BEFORE INSERT ON generations WHEN NEW.key_hash = ${sql.lit(hash)} AND NEW.total_cost > 0
          BEGIN SELECT RAISE(ABORT, 'the tables refuse'); END`.execute(db);
      else
        await sql`ALTER TABLE generations ADD CONSTRAINT ${sql.id(`refuse_${hash}`)} CHECK (key_hash <> ${sql.lit(hash)} OR total_cost <= 0) NOT VALID`.execute(
          db,
        );
    };
    const allowKey = async (hash: string) => {
      if (target.name === 'sqlite') await sql`DROP TRIGGER ${sql.id(`refuse_${hash}`)}`.execute(db);
      else await sql`ALTER TABLE generations DROP CONSTRAINT ${sql.id(`refuse_${hash}`)}`.execute(db);
    };

    it('keeps a lone charge while the database refuses every paid charge of its key, and writes it once it takes them again', async () => {
      const a = await newAccount();
      const hash = `h-lone-refused-${target.name}`;
      await newKey(a.id, hash);
      // A rule refuses every paid generation of this key: the database refuses the writes, not this charge.
      await refuseKey(hash);
      const rejected: string[] = [];
      const errors: unknown[] = [];
      const guarded = new KyselyLedger(db, { onChargeRejected: (_e, c) => rejected.push(c.id), onFlushError: (e) => errors.push(e), retryDelayMs: 60_000 });
      const kept = charge(a.id, hash, 3n);
      const written = guarded.charge(kept);
      for (let i = 0; i < 8; i++) await guarded.flush().catch(() => undefined);
      expect(rejected).toEqual([]);
      expect(errors.length).toBeGreaterThanOrEqual(8); // each try said why it failed
      expect(await ledger.getGeneration(kept.id)).toBeUndefined();
      await allowKey(hash);
      await guarded.flush();
      await written;
      expect(rejected).toEqual([]);
      expect((await ledger.getGeneration(kept.id))?.totalCost).toBe(3n);
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(3n);
    });

    it('in a batch no charge of which could be written, sets aside the one no column can hold and keeps the one a rule of the tables refuses', async () => {
      const a = await newAccount();
      const [poisoned, ruled] = [`h-all-poison-${target.name}`, `h-all-ruled-${target.name}`];
      await newKey(a.id, poisoned);
      await newKey(a.id, ruled);
      await refuseKey(ruled);
      const rejected: string[] = [];
      const errors: unknown[] = [];
      const guarded = new KyselyLedger(db, {
        onChargeRejected: (e, c) => {
          rejected.push(c.id);
          errors.push(e);
        },
        retryDelayMs: 60_000,
      });
      const poison = charge(a.id, poisoned, 2n ** 64n); // cannot fit a BIGINT column
      const kept = charge(a.id, ruled, 3n);
      const written = [guarded.charge(poison), guarded.charge(kept)]; // one batch
      for (let i = 0; i < 10 && rejected.length === 0; i++) await guarded.flush().catch(() => undefined);
      expect(rejected).toEqual([poison.id]);
      // Reported with its own failure (what does not fit, and the database's error), not the other's rule.
      expect(String((errors[0] as Error).message)).toContain('total_cost');
      expect(String(((errors[0] as Error).cause as Error).message)).not.toMatch(/refuse|check constraint/);
      for (let i = 0; i < 5; i++) await guarded.flush().catch(() => undefined);
      expect(rejected).toEqual([poison.id]); // the other's tries did not count: it is kept
      expect(await ledger.getGeneration(kept.id)).toBeUndefined(); // not in the tables yet: kept, pending
      await allowKey(ruled);
      await guarded.flush();
      await Promise.all(written);
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(3n);
      expect((await ledger.getGeneration(kept.id))?.totalCost).toBe(3n);
      expect(await ledger.getGeneration(poison.id)).toBeUndefined();
    });

    it.runIf(target.name === 'postgres')(
      'at shutdown, tries a refused charge a retry interval apart, as while serving: past the deadline it is answered unwritten, not set aside',
      async () => {
        const a = await newAccount();
        const hash = 'h-close-refused';
        await newKey(a.id, hash);
        const rejected: string[] = [];
        // Its own handle: close() ends it.
        const own = openDatabase(url);
        const closing = new KyselyLedger(own, { onChargeRejected: (_e, c) => rejected.push(c.id), retryDelayMs: 60_000, shutdownDeadlineMs: 300 });
        const poison = charge(a.id, hash, 2n ** 64n); // cannot fit a BIGINT column
        void closing.charge(poison);
        // One try, then the retry's wait runs into the deadline: five tries back to back would have set it aside.
        expect((await closing.close()).map((c) => c.id)).toEqual([poison.id]);
        expect(rejected).toEqual([]);
      },
    );

    it.runIf(target.name === 'postgres')('at shutdown, writes a backlog of several batches straight on, with no retry interval between them', async () => {
      const a = await newAccount();
      const hash = 'h-close-backlog';
      await newKey(a.id, hash);
      const own = openDatabase(url);
      const closing = new KyselyLedger(own, { retryDelayMs: 60_000, shutdownDeadlineMs: 5_000 });
      const backlog = Array.from({ length: 2_500 }, () => charge(a.id, hash, 1n)); // two group commits (MAX_BATCH 2,000)
      for (const c of backlog) void closing.charge(c);
      // A wait of a retry interval after the first would run past the deadline and answer 500 unwritten.
      expect(await closing.close()).toEqual([]);
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(2_500n);
    });

    it('issue 7 item 9: writes a batch larger than one statement whole, each generation once, balances exact', async () => {
      const accounts = await Promise.all(Array.from({ length: 7 }, () => newAccount()));
      await Promise.all(accounts.map((a, i) => newKey(a.id, `h-batch-${target.name}-${i}`)));
      const charges = Array.from({ length: 1234 }, (_, i) => charge(accounts[i % 7]!.id, `h-batch-${target.name}-${i % 7}`, BigInt(1 + (i % 13))));
      const written = charges.map((c) => ledger.charge(c));
      written.push(ledger.charge(charges[5]!)); // the same generation twice in one batch
      await ledger.flush();
      await Promise.all(written);
      ledger.charge(charges[9]!); // and again once it is recorded
      await ledger.flush();
      for (const [i, a] of accounts.entries()) {
        const mine = charges.filter((_, j) => j % 7 === i);
        const sum = mine.reduce((s, c) => s + c.totalCost, 0n);
        expect((await ledger.getAccount(a.id))?.totalUsage).toBe(sum);
        expect((await ledger.keyUsage(`h-batch-${target.name}-${i}`, T0)).all.usage).toBe(sum);
      }
      const n = await db
        .selectFrom('generations')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('id', 'like', 'gen-test-%')
        .executeTakeFirstOrThrow();
      expect(Number(n.n)).toBeGreaterThanOrEqual(1234);
    });

    it('issue 7 item 9: an answer waits for its charge a bounded time, and without bound past the backlog bound', async () => {
      const a = await newAccount();
      const hash = `h-wait-${target.name}`;
      await newKey(a.id, hash);
      const bounded = new KyselyLedger(db, { durableWaitMs: 20, maxQueuedCharges: 2, retryDelayMs: 60_000, journal });
      await breakCharges();
      try {
        // One charge waiting: below the bound, the answer goes after the wait, its charge still queued.
        const first = bounded.charge(charge(a.id, hash, 5n));
        expect(await bounded.awaitDurable(first)).toBe(false);
        // Two waiting: at the bound, the answer waits until its charge is written.
        const second = bounded.charge(charge(a.id, hash, 7n));
        let answered = false;
        const waiting = bounded.awaitDurable(second).then((durable) => ((answered = true), durable));
        await bounded.flush().catch(() => undefined);
        expect(answered).toBe(false);
        await repairCharges();
        await bounded.flush();
        expect(await waiting).toBe(true);
        expect((await ledger.getAccount(a.id))?.totalUsage).toBe(12n);
      } finally {
        await restoreCharges();
      }
    });

    it.runIf(target.name === 'postgres')(
      'PostgreSQL not taking a charge in time: it is made durable in the fallback journal before its answer goes; a process killed then loses none',
      async () => {
        const a = await newAccount();
        const hash = `h-fallback-${target.name}`;
        await newKey(a.id, hash);
        const dir = mkdtempSync(join(tmpdir(), 'tollgate-fallback-'));
        const killed = new KyselyLedger(db, { durableWaitMs: 20, retryDelayMs: 60_000, fallbackJournal: new FileChargeJournal(dir) });
        await breakCharges();
        try {
          const written = killed.charge(charge(a.id, hash, 11n));
          // The database does not take it: past the bounded wait it is on disk, and the answer may go as durable.
          expect(await killed.awaitDurable(written)).toBe(true);
          expect(readdirSync(dir).length).toBe(1);
          // The process is killed here (nothing more of `killed` runs); the database comes back.
          await repairCharges();
          const next = new KyselyLedger(db, { fallbackJournal: new FileChargeJournal(dir) });
          expect(await next.recoverJournal()).toBe(1);
          expect((await ledger.getAccount(a.id))?.totalUsage).toBe(11n);
          // Applied once, however often the journal is read again.
          await new KyselyLedger(db, { fallbackJournal: new FileChargeJournal(dir) }).recoverJournal();
          expect((await ledger.getAccount(a.id))?.totalUsage).toBe(11n);
        } finally {
          await restoreCharges();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );

    it.runIf(target.name === 'postgres')(
      'PostgreSQL refusing at shutdown: close() does not wait out its deadline for charges the fallback journal holds; the next start applies them',
      async () => {
        const a = await newAccount();
        const hash = `h-fallback-close-${target.name}`;
        await newKey(a.id, hash);
        const dir = mkdtempSync(join(tmpdir(), 'tollgate-fallback-'));
        const stopping = new KyselyLedger(openDatabase(url), {
          durableWaitMs: 20,
          retryDelayMs: 100,
          shutdownDeadlineMs: 600_000, // waited out, the test would time out
          fallbackJournal: new FileChargeJournal(dir),
        });
        await breakCharges();
        try {
          expect(await stopping.awaitDurable(stopping.charge(charge(a.id, hash, 5n)))).toBe(true);
          expect(await stopping.close()).toEqual([]); // nothing to log: it is in the journal
          await repairCharges();
          expect(await new KyselyLedger(db, { fallbackJournal: new FileChargeJournal(dir) }).recoverJournal()).toBe(1);
          expect((await ledger.getAccount(a.id))?.totalUsage).toBe(5n);
        } finally {
          await restoreCharges();
          rmSync(dir, { recursive: true, force: true });
        }
      },
      20_000,
    );

    it('shutdown past its grace lets the answers held back by the backlog bound go, their charges still queued', async () => {
      const a = await newAccount();
      const hash = `h-release-${target.name}`;
      await newKey(a.id, hash);
      const bounded = new KyselyLedger(db, { durableWaitMs: 20, maxQueuedCharges: 1, retryDelayMs: 60_000, journal });
      await breakCharges();
      try {
        const written = bounded.charge(charge(a.id, hash, 9n));
        let answered: boolean | undefined;
        const waiting = bounded.awaitDurable(written).then((durable) => (answered = durable));
        await bounded.flush().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 40)); // its bounded wait is over: held back
        expect(answered).toBeUndefined();
        bounded.releaseAnswers();
        expect(await waiting).toBe(false);
        // Held back no more: a later answer goes after the bounded wait, whatever the backlog.
        const later = bounded.charge(charge(a.id, hash, 4n));
        expect(await bounded.awaitDurable(later)).toBe(false);
        // Both charges are still queued, to be written when the database answers (or logged by close()).
        await repairCharges();
        // One at a time past a backlog bound of one (the journal takes one, the tables take it, the next).
        await bounded.flush().catch(() => undefined);
        await bounded.flush();
        expect((await ledger.getAccount(a.id))?.totalUsage).toBe(13n);
      } finally {
        await restoreCharges();
      }
    });

    it('keeps charges queued while the database fails, and writes them once when it answers again', async () => {
      const a = await newAccount();
      const hash = `h-retry-${target.name}`;
      await newKey(a.id, hash);
      const errors: unknown[] = [];
      const flaky = new KyselyLedger(db, { onFlushError: (e) => errors.push(e), retryDelayMs: 60_000, journal });
      await breakCharges();
      flaky.charge(charge(a.id, hash, 5n));
      flaky.charge(charge(a.id, hash, 7n));
      await expect(flaky.flush()).rejects.toBeDefined();
      expect(errors.length).toBe(1);
      await repairCharges();
      // Nothing was half-written by the failed batch.
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(0n);
      await flaky.flush();
      await flaky.flush();
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(12n);
      expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(12n);
    });

    // PostgreSQL only: SQLite connections in one thread would wait on each other synchronously.
    it.runIf(target.name === 'postgres')(
      'several processes charging the same accounts at once, in opposite orders: every commit goes through, totals exact',
      async () => {
        const dbs = Array.from({ length: 4 }, () => openDatabase(url));
        try {
          const errors: unknown[] = [];
          const ledgers = dbs.map((d) => new KyselyLedger(d, { onFlushError: (e) => errors.push(e), retryDelayMs: 60_000 }));
          const accounts = await Promise.all(
            Array.from({ length: 20 }, () => ledgers[0]!.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false })),
          );
          const hash = (i: number) => `h-locks-${target.name}-${i}`;
          await Promise.all(accounts.map((a, i) => newKeyOn(ledgers[0]!, a.id, hash(i))));
          // Each process charges every account in every round, each in its own order.
          for (let round = 0; round < 20; round++) {
            await Promise.all(
              ledgers.map(async (l, p) => {
                const order = p % 2 === 0 ? accounts.map((_, i) => i) : accounts.map((_, i) => accounts.length - 1 - i);
                const written = order.map((i) => l.charge(charge(accounts[i]!.id, hash(i), BigInt(1 + p))));
                await l.flush();
                await Promise.all(written);
              }),
            );
          }
          expect(errors).toEqual([]);
          for (const [i, a] of accounts.entries()) {
            expect((await ledgers[0]!.getAccount(a.id))?.totalUsage).toBe(20n * (1n + 2n + 3n + 4n));
            expect((await ledgers[0]!.keyUsage(hash(i), T0)).daily.usage).toBe(20n * 10n);
          }
        } finally {
          await Promise.all(dbs.map((d) => d.destroy()));
        }
      },
    );

    it('issue 8: first start is race-free: of many processes creating a setting at once, one value wins and one creates it', async () => {
      // Each "process" is a ledger on a connection of its own to one database: PostgreSQL pools, or
      // SQLite connections to one file (an in-memory database cannot be shared).
      const dir = target.name === 'sqlite' ? mkdtempSync(join(tmpdir(), 'tollgate-settings-')) : undefined;
      const shared = dir ? `sqlite:${join(dir, 'ledger.db')}` : url;
      const dbs = Array.from({ length: 6 }, () => openDatabase(shared));
      try {
        if (dir) await migrateToLatest(dbs[0]!);
        const ledgers = dbs.map((d) => new KyselyLedger(d));
        let made = 0;
        const results = await Promise.all(
          ledgers.flatMap((l) => Array.from({ length: 5 }, () => l.settingOrCreate('secrets_key', () => `key-${(made += 1)}`))),
        );
        expect(new Set(results.map((r) => r.value)).size).toBe(1);
        expect(results.filter((r) => r.created).length).toBe(1);
        expect(await ledgers[0]!.getSetting('secrets_key')).toBe(results[0]!.value);
        // Later starts find it and create nothing.
        expect(await ledgers[1]!.settingOrCreate('secrets_key', () => 'another')).toEqual({ value: results[0]!.value, created: false });
      } finally {
        await Promise.all(dbs.map((d) => d.destroy()));
        if (dir) rmSync(dir, { recursive: true, force: true });
      }
    });

    it.runIf(target.name === 'postgres')('issue 8: processes starting at once on a fresh database all migrate it, without failing', async () => {
      const fresh = await target.create();
      const dbs = Array.from({ length: 3 }, () => openDatabase(fresh.url));
      try {
        await Promise.all(dbs.map((d) => migrateToLatest(d)));
        const ran = await sql<{ name: string }>`select name from tollgate_migrations order by name`.execute(dbs[0]!);
        expect(ran.rows.map((r) => r.name)).toEqual([
          '0001_initial',
          '0002_generation_usage_source',
          '0003_account_seq',
          '0004_key_lifecycle',
          '0005_spend_rollups',
          '0006_alert_crossings',
          '0007_generations_one_account_index',
          '0008_charge_journal',
          '0009_charge_journal_entries',
        ]);
        const l = new KyselyLedger(dbs[1]!);
        const a = await l.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });
        expect((await new KyselyLedger(dbs[2]!).getAccount(a.id))?.balance).toBe(0n);
      } finally {
        await Promise.all(dbs.map((d) => d.destroy()));
        await fresh.drop();
      }
    });

    it('a commit of generations an earlier commit recorded moves nothing, and reports their account and key as they stand', async () => {
      const a = await newAccount();
      const hash = `h-again-${target.name}`;
      await newKey(a.id, hash);
      const writer = target.name === 'postgres' ? postgresCommitWriter : sqliteCommitWriter;
      const charges = [charge(a.id, hash, 5n), charge(a.id, hash, 6n)];
      await writeCommit(db, writer, charges);
      // The same generations again (as after a COMMIT whose answer was lost, or a second process).
      const [update] = await writeCommit(db, writer, charges);
      expect((await ledger.getAccount(a.id))?.totalUsage).toBe(11n);
      expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(11n);
      expect([...(update?.committed ?? [])].sort()).toEqual(charges.map((c) => c.id).sort());
      expect(update?.account).toMatchObject({ totalUsage: 11n, balance: -11n });
      expect(update?.keys?.[0]?.periods.find((p) => p.period === 'all')).toMatchObject({ usage: 11n, seq: update?.account?.seq });
    });

    // SQLite: a group commit appends its charges to the charge journal; the tables get them in bulk.
    it.runIf(target.name === 'sqlite')(
      'issue 9: a charge is durable once journaled; reads see it at once (the journal is applied first), and the tables have it within moments',
      async () => {
        const a = await newAccount();
        const hash = `h-journal-${target.name}`;
        await newKey(a.id, hash);
        const inTables = async (id: string) => (await db.selectFrom('generations').select('id').where('id', '=', id).execute()).length;
        const local = new KyselyLedger(db);
        try {
          const c = charge(a.id, hash, 9n);
          await local.charge(c); // durable: in the journal, not yet in the tables
          expect(await inTables(c.id)).toBe(0);
          // A read of this ledger sees it: the journal goes to the tables first.
          expect((await local.getAccount(a.id))?.totalUsage).toBe(9n);
          expect(await inTables(c.id)).toBe(1);
          // Without a read: applied within APPLY_MS by itself.
          const d = charge(a.id, hash, 4n);
          await local.charge(d);
          await local.recorded(d.id);
          expect(await inTables(d.id)).toBe(1);
          expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(13n);
        } finally {
          await local.flush(); // (close() would close the database this suite shares)
        }
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: journaled charges that fill a batch go to the tables at once, not after the wait for one (a wait under load kept every request alive for it)',
      async () => {
        const a = await newAccount();
        const hash = `h-batch-${target.name}`;
        await newKey(a.id, hash);
        // The wait for a batch is a minute here: only the batch itself can bring the charges to the tables
        // within the test's timeout (before, a wait once started ran its course whatever filled meanwhile).
        const local = new KyselyLedger(db, { applyDelayMs: 60_000 });
        try {
          const one = charge(a.id, hash, 1n);
          await local.charge(one); // the wait for a batch starts
          const rest = Array.from({ length: APPLY_BATCH - 1 }, (_, i) => charge(a.id, hash, 2n, T0 + i));
          await Promise.all(rest.map((c) => local.charge(c))); // APPLY_BATCH journaled: a batch
          await Promise.all([one, ...rest].map((c) => local.recorded(c.id)));
          expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(1n + BigInt(APPLY_BATCH - 1) * 2n);
        } finally {
          await local.flush();
        }
      },
      10_000,
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: a process stopped with charges journaled loses none: the next start applies each once, every field exact, and the stopped one applying them too changes nothing',
      async () => {
        const hash = 'h-recover';
        await onOneFile(hash, async ({ first, next, stopped, accountId, journalDir, later }) => {
          const huge = 2n ** 62n + 7n;
          const odd = charge(accountId, hash, huge, T0, {
            model: 'we"ird\\model,{x}',
            finishReason: null,
            usageSource: null,
            byokUsage: 2n ** 60n + 1n,
            isByok: true,
          });
          const plain = charge(accountId, hash, 5n, T0 + 1);
          await Promise.all([stopped.charge(odd), stopped.charge(plain)]); // durable, in the journal
          expect(segmentsIn(journalDir).length).toBe(1);
          await first.destroy(); // the process stops before it applies them (its handle is gone)
          // A start soon after, on the same file: it applies them, and leaves the file (the process that
          // wrote it may still be running).
          expect(await new KyselyLedger(next).recoverJournal()).toBe(2);
          expect(segmentsIn(journalDir).length).toBe(1);
          // A start an hour later applies them again, each once, and deletes the file.
          const started = new KyselyLedger(next, { journal: later() });
          expect(await started.recoverJournal()).toBe(2);
          expect(segmentsIn(journalDir)).toEqual([]);
          expect(await started.getGeneration(odd.id)).toEqual(odd);
          expect(await started.getGeneration(plain.id)).toEqual(plain);
          expect((await started.getAccount(accountId))?.totalUsage).toBe(huge + 5n);
          expect((await started.keyUsage(hash, T0)).all).toEqual({ usage: huge + 5n, byokUsage: 2n ** 60n + 1n });
          expect(await new KyselyLedger(next, { journal: later() }).recoverJournal()).toBe(0);
          // Two processes applying the same journaled charge (one starting while the other runs): once.
          const running = new KyselyLedger(next);
          const again = charge(accountId, hash, 3n, T0 + 2);
          await running.charge(again);
          await new KyselyLedger(next).recoverJournal();
          await running.flush();
          expect((await started.getAccount(accountId))?.totalUsage).toBe(huge + 8n);
        });
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: a group commit is one line of the journal; a start after a stop part-way through applying it applies the rest, each once, and deletes the file',
      async () => {
        const hash = 'h-entries';
        await onOneFile(hash, async ({ first, next, stopped, accountId, journalDir, later }) => {
          // The tables take 64 generations (one application's batch), then refuse.
          await sql`CREATE TRIGGER refuse_after_64 BEFORE INSERT ON generations WHEN (SELECT count(*) FROM generations) >= 64
            BEGIN SELECT RAISE(ABORT, 'the tables refuse'); END`.execute(first);
          const charges = Array.from({ length: 65 }, (_, i) => charge(accountId, hash, BigInt(i + 1)));
          await Promise.all(charges.map((c) => stopped.charge(c))); // one group commit: durable, one line
          const [segment] = segmentsIn(journalDir);
          const lines = readFileSync(join(journalDir, segment ?? ''), 'utf8').split('\n');
          expect(lines.length).toBe(2); // the entry and what follows its newline: nothing
          expect(journalEntryCharges(lines[0] ?? '')).toEqual(charges);
          await stopped.flush().catch(() => undefined); // the first 64 go in; the last is refused
          const applied = await first.selectFrom('generations').select('id').execute();
          expect(applied.length).toBe(64);
          await first.destroy(); // the process stops part-way
          await sql`DROP TRIGGER refuse_after_64`.execute(next);
          const started = new KyselyLedger(next, { journal: later() });
          expect(await started.recoverJournal()).toBe(65);
          const sum = charges.reduce((t, c) => t + c.totalCost, 0n);
          expect((await started.getAccount(accountId))?.totalUsage).toBe(sum); // the 64 not charged twice
          expect((await started.keyUsage(hash, T0)).all.usage).toBe(sum);
          expect(segmentsIn(journalDir)).toEqual([]);
        });
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: a charge set aside is never applied from the journal by a later start; the rest of its entry is, each once',
      async () => {
        const rejected: string[] = [];
        const hash = 'h-aside';
        await onOneFile(
          hash,
          async ({ first, next, stopped, accountId, journalDir, later }) => {
            const poison = charge(accountId, hash, 2n ** 64n); // cannot fit a BIGINT column: refused at each try
            // Each try applies APPLY_BATCH − 1 good charges beside the refused one; the fifth sets it aside.
            // Then the tables refuse the rest for now (5 × (APPLY_BATCH − 1) generations in).
            const taken = 5 * (APPLY_BATCH - 1);
            const good = Array.from({ length: taken + APPLY_BATCH + 20 }, (_, i) => charge(accountId, hash, BigInt(i + 1)));
            await Promise.all([poison, ...good].map((c) => stopped.charge(c))); // one entry
            await sql`CREATE TRIGGER refuse_after BEFORE INSERT ON generations WHEN (SELECT count(*) FROM generations) >= ${sql.lit(taken)}
              BEGIN SELECT RAISE(ABORT, 'the tables refuse'); END`.execute(first);
            for (let i = 0; i < 10 && rejected.length === 0; i++) await stopped.flush().catch(() => undefined);
            expect(rejected).toEqual([poison.id]);
            const inTables = new Set((await first.selectFrom('generations').select('id').execute()).map((r) => r.id));
            expect(inTables.size).toBe(taken);
            // The journal says the one set aside is: a line after its entry.
            const [segment] = segmentsIn(journalDir);
            expect(readFileSync(join(journalDir, segment ?? ''), 'utf8').split('\n')[1]).toBe(JSON.stringify({ x: [poison.id] }));
            await first.destroy(); // the process stops
            await sql`DROP TRIGGER refuse_after`.execute(next);
            const started = new KyselyLedger(next, { journal: later(), onChargeRejected: (_e, c) => rejected.push(c.id) });
            expect(await started.recoverJournal()).toBe(good.length); // every good charge; those applied already are recorded once
            const sum = good.reduce((t, c) => t + c.totalCost, 0n);
            expect((await started.getAccount(accountId))?.totalUsage).toBe(sum);
            expect(await started.getGeneration(poison.id)).toBeUndefined();
            expect(rejected).toEqual([poison.id]); // not tried, so not logged, again
            expect(segmentsIn(journalDir)).toEqual([]);
          },
          { onChargeRejected: (_e, c) => rejected.push(c.id) },
        );
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: a commit that landed stays landed when the listener told of it throws; a stop then loses none of the rest',
      async () => {
        let throws = 1;
        const flushErrors: unknown[] = [];
        const hash = 'h-listener';
        await onOneFile(
          hash,
          async ({ first, next, stopped, accountId, journalDir, later }) => {
            await sql`CREATE TRIGGER refuse_after_64 BEFORE INSERT ON generations WHEN (SELECT count(*) FROM generations) >= 64
              BEGIN SELECT RAISE(ABORT, 'the tables refuse'); END`.execute(first);
            const charges = Array.from({ length: 100 }, (_, i) => charge(accountId, hash, BigInt(i + 1)));
            await Promise.all(charges.map((c) => stopped.charge(c)));
            await stopped.flush().catch(() => undefined); // 64 land (the listener throws then); 36 are refused
            expect(flushErrors.some((e) => e instanceof Error && e.message === 'listener failed')).toBe(true);
            expect((await first.selectFrom('generations').select('id').execute()).length).toBe(64);
            await first.destroy();
            await sql`DROP TRIGGER refuse_after_64`.execute(next);
            const started = new KyselyLedger(next, { journal: later() });
            expect(await started.recoverJournal()).toBe(100);
            expect((await started.getAccount(accountId))?.totalUsage).toBe(charges.reduce((t, c) => t + c.totalCost, 0n));
            expect(segmentsIn(journalDir)).toEqual([]);
          },
          {
            onCommitted: () => {
              if (throws-- > 0) throw new Error('listener failed');
            },
            onFlushError: (err) => flushErrors.push(err),
          },
        );
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: the journal starts a new file every minute; each goes once its charges are in the tables, and a stop loses none of the rest',
      async () => {
        const hash = 'h-rotate';
        await onOneFile(hash, async ({ first, next, accountId, journalDir, later }) => {
          let now = Date.now();
          const local = new KyselyLedger(first, { journal: new FileChargeJournal(journalDir, { now: () => now }), applyDelayMs: 60_000, retryDelayMs: 60_000 });
          const c1 = charge(accountId, hash, 1n);
          const c2 = charge(accountId, hash, 2n, T0 + 1);
          const c3 = charge(accountId, hash, 4n, T0 + 2);
          await local.charge(c1);
          now += 60_000;
          await local.charge(c2);
          expect(segmentsIn(journalDir)).toHaveLength(2);
          await local.flush(); // both in the tables: the first file goes, the one being written stays
          expect(segmentsIn(journalDir)).toHaveLength(1);
          await sql`CREATE TRIGGER refuse_c3 BEFORE INSERT ON generations WHEN NEW.id = ${sql.lit(c3.id)} BEGIN SELECT RAISE(ABORT, 'no'); END`.execute(first);
          now += 60_000;
          await local.charge(c3); // a third file: the second, all in the tables, goes as it is left
          await local.flush().catch(() => undefined); // the tables refuse it
          const [left] = segmentsIn(journalDir);
          expect(segmentsIn(journalDir)).toHaveLength(1);
          expect(readFileSync(join(journalDir, left ?? ''), 'utf8')).toContain(c3.id);
          await first.destroy(); // the process stops with c3 journaled, not applied
          await sql`DROP TRIGGER refuse_c3`.execute(next);
          const started = new KyselyLedger(next, { journal: later() });
          expect(await started.recoverJournal()).toBe(1);
          expect((await started.getAccount(accountId))?.totalUsage).toBe(7n);
          expect(segmentsIn(journalDir)).toEqual([]);
        });
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: a start that finds a file a running process may still write applies it, and reads it again once it is final: what was added meanwhile too, each once',
      async () => {
        const hash = 'h-young';
        await onOneFile(hash, async ({ first, next, stopped, accountId, journalDir }) => {
          const a = charge(accountId, hash, 1n);
          const b = charge(accountId, hash, 2n, T0 + 1);
          await stopped.charge(a); // journaled; the writer runs on
          let now = Date.now();
          const reader = new KyselyLedger(next, { journal: new FileChargeJournal(journalDir, { now: () => now }) });
          expect(await reader.recoverJournal()).toBe(1);
          await reader.flush();
          expect(segmentsIn(journalDir)).toHaveLength(1); // left to its writer
          await stopped.charge(b); // written after the read, then the writer stops before applying it
          await first.destroy();
          now += 11 * 60_000 + 1000; // final: what the timer of recoverJournal does then
          const paths = new Set(segmentsIn(journalDir).map((n) => join(journalDir, n)));
          expect(await reader.recoverJournal(paths)).toBe(2);
          expect((await reader.getAccount(accountId))?.totalUsage).toBe(3n);
          expect(segmentsIn(journalDir)).toEqual([]);
        });
      },
    );

    it('issue 9: leftover files are read again a second after they are final, and at most an hour later (a name far in the future waits, not fires at once)', () => {
      expect(leftoverDelay(T0 + 5000, T0)).toBe(6000);
      expect(leftoverDelay(T0 - 5000, T0)).toBe(1000);
      expect(leftoverDelay(T0 + 365 * 24 * HOUR, T0)).toBe(HOUR);
    });

    it.runIf(target.name === 'sqlite')(
      'issue 9: a start applies a leftover entry whose generation another leftover entry also holds: the rest of it too, each once',
      async () => {
        const hash = 'h-shared';
        await onOneFile(hash, async ({ next, accountId, journalDir, later }) => {
          const x = charge(accountId, hash, 5n);
          const y = charge(accountId, hash, 7n);
          // Two stopped processes' entries (the same generation charged again after a lost answer, say).
          new FileChargeJournal(journalDir).append([x]);
          new FileChargeJournal(journalDir).append([x, y]);
          const started = new KyselyLedger(next, { journal: later() });
          expect(await started.recoverJournal()).toBe(2);
          expect((await started.getAccount(accountId))?.totalUsage).toBe(12n);
          expect(segmentsIn(journalDir)).toEqual([]);
        });
      },
    );

    it.runIf(target.name === 'sqlite')(
      "issue 9: an earlier version's journal row keeps only what is not set aside, and goes when nothing is left",
      async () => {
        const a = await newAccount();
        const hash = `h-discard-${target.name}`;
        const cs = [charge(a.id, hash, 1n), charge(a.id, hash, 2n), charge(a.id, hash, 3n)];
        const inserted = await sql<{ seq: number }>`INSERT INTO charge_journal (charges) VALUES (${journalEntryText(cs)}) RETURNING seq`.execute(db);
        const seq = Number(inserted.rows[0]?.seq);
        await journalTableRows.discard(db, seq, [cs[0]!, cs[2]!]);
        const mine = async () => (await journalTableRows.leftover(db)).filter((e) => e.seq === seq);
        expect(await mine()).toEqual([{ seq, charges: [cs[0], cs[2]] }]);
        await journalTableRows.discard(db, seq, []);
        expect(await mine()).toEqual([]);
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: charges a stopped process journaled before entries (one row a charge) are applied after the upgrade, each once',
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'tollgate-journal-0008-'));
        const old = openDatabase(`sqlite:${join(dir, 'ledger.db')}`);
        try {
          await migrateUpTo(old, '0009');
          const l = new KyselyLedger(old);
          const a = await l.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });
          await newKeyOn(l, a.id, 'h-0008');
          const cs = [charge(a.id, 'h-0008', 7n), charge(a.id, 'h-0008', 2n ** 62n, T0, { finishReason: null })];
          for (const c of cs) {
            const record = JSON.stringify({ ...c, totalCost: c.totalCost.toString(), byokUsage: c.byokUsage.toString() });
            await sql`INSERT INTO charge_journal (id, record) VALUES (${c.id}, ${record})`.execute(old);
          }
          await migrateToLatest(old);
          // Run again (a stop after it and before the migrator recorded it): it sees it is done, and changes nothing.
          await migrations['0009_charge_journal_entries']!.up(old as Kysely<unknown>);
          expect(await journaledIds(old)).toEqual(cs.map((c) => c.id));
          const started = new KyselyLedger(old);
          expect(await started.recoverJournal()).toBe(2);
          expect((await started.getAccount(a.id))?.totalUsage).toBe(7n + 2n ** 62n);
          expect(await started.getGeneration(cs[1]!.id)).toEqual(cs[1]);
          expect(await journaledIds(old)).toEqual([]);
        } finally {
          await old.destroy();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );

    it.runIf(target.name === 'sqlite')(
      'issue 9: a journal append that fails near the backlog bound keeps the whole batch queued, the part past the bound too; each lands once later',
      async () => {
        const a = await newAccount();
        const hash = `h-over-${target.name}`;
        await newKey(a.id, hash);
        const failing = new BreakableJournal();
        const behind = new KyselyLedger(db, { maxQueuedCharges: 3, durableWaitMs: 20, retryDelayMs: 60_000, journal: failing });
        await sql`CREATE TRIGGER refuse_over BEFORE INSERT ON generations BEGIN SELECT RAISE(ABORT, 'the tables refuse'); END`.execute(db);
        try {
          await behind.charge(charge(a.id, hash, 1n)); // journaled; the tables refuse it: 1 of 3 behind
          await behind.flush().catch(() => undefined);
          failing.broken = true;
          const rest = [2n, 3n, 4n, 5n].map((n) => behind.charge(charge(a.id, hash, n))); // one batch: 2 fit, 2 past the bound
          await behind.flush().catch(() => undefined); // the append fails: all four stay queued
          failing.broken = false;
          await sql`DROP TRIGGER refuse_over`.execute(db);
          for (let i = 0; i < 6; i++) await behind.flush().catch(() => undefined);
          await Promise.all(rest);
          expect((await ledger.getAccount(a.id))?.totalUsage).toBe(15n);
        } finally {
          await sql`DROP TRIGGER IF EXISTS refuse_over`.execute(db);
        }
      },
    );

    it.runIf(target.name === 'sqlite')('issue 9: a listener that throws while a charge is set aside leaves no journal file behind for good', async () => {
      const hash = 'h-throwing';
      const rejected: string[] = [];
      await onOneFile(
        hash,
        async ({ stopped, accountId, journalDir }) => {
          const poison = charge(accountId, hash, 2n ** 64n); // cannot fit a BIGINT column: refused at each try
          await stopped.charge(poison);
          // Each try carries a good charge beside it (a charge refused alone counts its tries too).
          let sum = 0n;
          for (let i = 0; i < 10 && rejected.length === 0; i++) {
            sum += BigInt(i + 1);
            await stopped.charge(charge(accountId, hash, BigInt(i + 1), T0 + i));
            await stopped.flush().catch(() => undefined);
          }
          expect(rejected).toEqual([poison.id]);
          expect((await stopped.getAccount(accountId))?.totalUsage).toBe(sum);
          await stopped.close(); // its last file goes: nothing of it is outstanding
          expect(segmentsIn(journalDir)).toEqual([]);
        },
        {
          onChargeRejected: (_e, c) => {
            rejected.push(c.id);
            throw new Error('the listener fails');
          },
        },
      );
    });

    it.runIf(target.name === 'sqlite')(
      'issue 9: while the tables refuse charges and the journal takes them, answers go until the backlog bound, then wait; once the tables take them, each lands once',
      async () => {
        const a = await newAccount();
        const hash = `h-refuse-${target.name}`;
        await newKey(a.id, hash);
        const behind = new KyselyLedger(db, { maxQueuedCharges: 3, durableWaitMs: 20, retryDelayMs: 60_000 });
        await sql`CREATE TRIGGER refuse_charges BEFORE INSERT ON generations BEGIN SELECT RAISE(ABORT, 'the tables refuse'); END`.execute(db);
        try {
          const first = [1n, 2n, 3n].map((n) => behind.charge(charge(a.id, hash, n)));
          expect(await Promise.all(first.map((w) => behind.awaitDurable(w)))).toEqual([true, true, true]); // journaled
          const fourth = behind.charge(charge(a.id, hash, 4n));
          let answered = false;
          const waiting = behind.awaitDurable(fourth).then((durable) => ((answered = true), durable));
          await behind.flush().catch(() => undefined);
          for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
          expect(answered).toBe(false); // past the bound: waits, rather than piling up journaled charges
          await sql`DROP TRIGGER refuse_charges`.execute(db);
          await behind.flush(); // the tables take the three; the fourth is journaled
          await behind.flush(); // and taken too
          expect(await waiting).toBe(true);
          expect((await ledger.getAccount(a.id))?.totalUsage).toBe(10n);
          expect(await new KyselyLedger(db).recoverJournal()).toBe(0);
        } finally {
          await sql`DROP TRIGGER IF EXISTS refuse_charges`.execute(db);
        }
      },
    );

    // SQLite: the group commit runs on the handle Kysely's transactions use (one connection).
    it.runIf(target.name === 'sqlite')(
      "issue 9: a commit made while a transaction of Kysely's is open waits for it, so that the transaction rolling back takes no charge with it",
      async () => {
        const a = await newAccount();
        const hash = `h-in-trx-${target.name}`;
        await newKey(a.id, hash);
        let release: () => void = () => undefined;
        const held = new Promise<void>((resolve) => (release = resolve));
        let began: () => void = () => undefined;
        const inside = new Promise<void>((resolve) => (began = resolve));
        // An admin write open across an await (BEGIN issued, its statements to come), then rolled back.
        const admin = db
          .transaction()
          .execute(async (trx) => {
            await trx.updateTable('accounts').set({ name: 'renamed' }).where('id', '=', a.id).execute();
            began();
            await held;
            throw new Error('rolled back');
          })
          .catch((err: Error) => err.message);
        await inside;
        const committed = writeCommit(db, sqliteCommitWriter, [charge(a.id, hash, 7n)]);
        let done = false;
        void committed.then(() => (done = true));
        for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
        expect(done).toBe(false); // waiting for the transaction, not written inside it
        release();
        expect(await admin).toBe('rolled back');
        await committed;
        const account = await ledger.getAccount(a.id);
        expect(account?.name).toBe('a'); // the admin write was rolled back …
        expect(account?.totalUsage).toBe(7n); // … and the charge, written after it, stands
        expect((await ledger.keyUsage(hash, T0)).all.usage).toBe(7n);
      },
    );

    it("issue 9: a commit carrying a charge another process recorded reports that charge's key as it stands, though the commit moved its account", async () => {
      const a = await newAccount();
      const [k1, k2] = [`h-k1-${target.name}`, `h-k2-${target.name}`];
      await newKey(a.id, k1);
      await newKey(a.id, k2);
      const writer = target.name === 'postgres' ? postgresCommitWriter : sqliteCommitWriter;
      const x = charge(a.id, k1, 100n);
      await writeCommit(db, writer, [x]); // another process (a start applying a journal) recorded it
      const [update] = await writeCommit(db, writer, [x, charge(a.id, k2, 7n)]);
      expect([...(update?.committed ?? [])]).toContain(x.id); // the limits store drops x's pending charge …
      const k1All = update?.keys?.find((k) => k.hash === k1)?.periods.find((p) => p.period === 'all');
      expect(k1All).toMatchObject({ usage: 100n, seq: update?.account?.seq }); // … and keeps its usage
      expect(update?.account?.totalUsage).toBe(107n);
    });

    // A network connection's failure mode: a SQLite COMMIT runs in process, and either lands or throws.
    it.runIf(target.name === 'postgres')(
      'issue 8: a COMMIT whose answer is lost, again and again, neither drains the connections nor charges twice',
      async () => {
        // Fewer connections than failures: a connection kept by a failed COMMIT would leave none.
        const inner: Dialect = new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 2000 }) });
        const lost = { left: 0 }; // the setting up below commits; then COMMITs start losing their answers
        const lossy = new Kysely<Database>({ dialect: losingCommitAnswers(inner, lost) });
        try {
          const reports: LedgerUpdate[] = [];
          const l = new KyselyLedger(lossy, { retryDelayMs: 60_000, onCommitted: (u) => reports.push(...u) });
          const a = await l.createAccount({ name: 'a', type: 'prepaid', createdAt: T0, freeModelLimitsExempt: false });
          const hash = `h-lost-${target.name}`;
          await newKeyOn(l, a.id, hash);
          lost.left = 5;
          const charges = Array.from({ length: 3 }, () => charge(a.id, hash, 11n));
          const written = charges.map((c) => l.charge(c));
          // Each flush's commit lands and reports failure: the charges stay queued and are sent again.
          while (lost.left > 0) await expect(l.flush()).rejects.toThrow(/terminated/);
          await l.flush();
          await Promise.all(written);
          const fresh = new KyselyLedger(lossy);
          expect((await fresh.getAccount(a.id))?.totalUsage).toBe(33n);
          expect((await fresh.keyUsage(hash, T0)).all.usage).toBe(33n);
          // The commit that finally answered moved nothing (the first one had landed): it reports the
          // account and the key as they stand, so that the limits store drops the pending charges.
          const last = reports.at(-1);
          expect([...(last?.committed ?? [])].sort()).toEqual(charges.map((c) => c.id).sort());
          expect(last?.account).toMatchObject({ totalUsage: 33n, balance: -33n });
          expect(last?.keys?.[0]?.periods.find((p) => p.period === 'all')).toMatchObject({ usage: 33n, seq: last?.account?.seq });
        } finally {
          await lossy.destroy();
        }
      },
    );
  });
}
