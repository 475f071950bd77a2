import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import { byText, GENERATION_COLUMNS, withGenerationValues, type CommitWriter, type KeyUsageRow, type WrittenCommit } from './commit-writer.js';
import type { AccountSnapshot, Charge } from './ledger.js';
import type { Nano } from './money.js';
import { chargedAt, keyPeriodName, periodKeys, type PeriodKeys } from './periods.js';
import { rollupDeltas } from './spend-rollups.js';
import type { Database } from './schema.js';
import { big } from './rows.js';
import { writeOnHandle } from './sqlite-writes.js';

const DROP_JOURNALED = 'DELETE FROM charge_journal WHERE seq = ?';
const INSERT_GENERATION = `INSERT INTO generations (${GENERATION_COLUMNS.join(', ')}) VALUES (${GENERATION_COLUMNS.map(() => '?').join(', ')})
   ON CONFLICT (id) DO NOTHING`;
const CHARGE_ACCOUNT = `UPDATE accounts SET balance = balance - ?, total_usage = total_usage + ?, seq = seq + 1 WHERE id = ?
   RETURNING seq, balance, total_usage`;
const ADD_ROLLUP = `INSERT INTO spend_hourly (bucket, account_id, key_hash, model, provider, requests, cost, byok_usage, prompt_tokens, completion_tokens)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (bucket, account_id, key_hash, model, provider) DO UPDATE SET requests = spend_hourly.requests + excluded.requests,
     cost = spend_hourly.cost + excluded.cost, byok_usage = spend_hourly.byok_usage + excluded.byok_usage,
     prompt_tokens = spend_hourly.prompt_tokens + excluded.prompt_tokens, completion_tokens = spend_hourly.completion_tokens + excluded.completion_tokens`;
const ADD_KEY_USAGE = `INSERT INTO key_usage (key_hash, period, usage, byok_usage) VALUES (?, ?, ?, ?)
   ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, byok_usage = key_usage.byok_usage + excluded.byok_usage
   RETURNING key_hash, period, usage, byok_usage`;

interface UsageDelta {
  keyHash: string;
  period: string;
  usage: Nano;
  byokUsage: Nano;
}

/** What a commit's charges of one key in one day add to the key's usage (in each of that day's periods). */
interface KeyDayDelta {
  keyHash: string;
  periods: PeriodKeys;
  usage: Nano;
  byokUsage: Nano;
}

/**
 * What the charges recorded now add to each account and to each key's usage per period, in lock order.
 * A key's charges of one day add to the same four periods (all time, the day, its week and month):
 * they are summed once a key and day, then spread over the periods, where each charge added to four
 * sums by their names (a map lookup and two BigInt sums each).
 */
function deltasOf(charges: readonly Charge[], recorded: ReadonlySet<string>): { accounts: Array<[string, Nano]>; usage: UsageDelta[] } {
  const accounts = new Map<string, Nano>();
  const keyDays: KeyDayDelta[] = [];
  let last: KeyDayDelta | undefined;
  for (const c of charges) {
    if (!recorded.has(c.id)) continue; // already recorded: never charge twice
    accounts.set(c.accountId, (accounts.get(c.accountId) ?? 0n) + c.totalCost);
    // periodKeys answers one object a day.
    const p = periodKeys(chargedAt(c));
    if (last === undefined || last.keyHash !== c.keyHash || last.periods !== p) {
      last = keyDays.find((d) => d.keyHash === c.keyHash && d.periods === p);
      if (last === undefined) keyDays.push((last = { keyHash: c.keyHash, periods: p, usage: 0n, byokUsage: 0n }));
    }
    last.usage += c.totalCost;
    last.byokUsage += c.byokUsage;
  }
  const usage = new Map<string, UsageDelta>();
  for (const d of keyDays) {
    for (const period of [d.periods.all, d.periods.daily, d.periods.weekly, d.periods.monthly]) {
      const k = keyPeriodName(d.keyHash, period);
      const u = usage.get(k);
      if (u) {
        u.usage += d.usage;
        u.byokUsage += d.byokUsage;
      } else usage.set(k, { keyHash: d.keyHash, period, usage: d.usage, byokUsage: d.byokUsage });
    }
  }
  return {
    accounts: [...accounts].sort(([a], [b]) => byText(a, b)),
    usage: [...usage.values()].sort((a, b) => byText(a.keyHash, b.keyHash) || byText(a.period, b.period)),
  };
}

/** The whole commit as one synchronous better-sqlite3 transaction, its statements prepared once a handle. */
function commitOn(sqlite: BetterSqlite3.Database): (charges: readonly Charge[], journaled: readonly number[]) => WrittenCommit {
  const unjournal = sqlite.prepare(DROP_JOURNALED);
  const insertGenerationStatement = sqlite.prepare(INSERT_GENERATION);
  const insertGeneration = insertGenerationStatement.run.bind(insertGenerationStatement);
  const chargeAccount = sqlite.prepare(CHARGE_ACCOUNT);
  const addKeyUsage = sqlite.prepare(ADD_KEY_USAGE);
  const addRollup = sqlite.prepare(ADD_ROLLUP);
  const commit = sqlite.transaction((charges: readonly Charge[], journaled: readonly number[]): WrittenCommit => {
    const recorded = new Set<string>();
    // A generation already recorded inserts nothing (changes 0): it is not charged again.
    for (const c of charges) if (withGenerationValues(c, insertGeneration).changes > 0) recorded.add(c.id);
    const accounts = new Map<string, AccountSnapshot>();
    const keyRows: KeyUsageRow[] = [];
    const deltas = deltasOf(charges, recorded);
    for (const [accountId, cost] of deltas.accounts) {
      const r = chargeAccount.get(cost, cost, accountId) as { seq: unknown; balance: unknown; total_usage: unknown } | undefined;
      if (r) accounts.set(accountId, { seq: big(r.seq), balance: big(r.balance), totalUsage: big(r.total_usage) });
    }
    for (const d of deltas.usage) keyRows.push(...(addKeyUsage.all(d.keyHash, d.period, d.usage, d.byokUsage) as KeyUsageRow[]));
    // The spend rollups reports read, last, in their key order.
    for (const r of rollupDeltas(charges, recorded)) {
      addRollup.run(r.bucket, r.accountId, r.keyHash, r.model, r.provider, r.requests, r.cost, r.byokUsage, r.promptTokens, r.completionTokens);
    }
    // The journal entries whose charges are all applied (or recorded before) now: dropped, in the same transaction.
    for (const seq of journaled) unjournal.run(seq);
    return { recorded, accounts, keyRows };
  });
  // BEGIN IMMEDIATE: the write lock is taken at the start (another process writing waits, up to busy_timeout).
  return (charges, journaled) => commit.immediate(charges, journaled);
}

const commits = new WeakMap<BetterSqlite3.Database, (charges: readonly Charge[], journaled: readonly number[]) => WrittenCommit>();

/**
 * A group commit on SQLite: one transaction of single-row statements, each prepared once, run
 * synchronously on the database's better-sqlite3 handle (in process, a statement costs a few
 * microseconds; going through Kysely for each cost as much again), never inside a transaction of
 * Kysely's (sqlite-writes.ts). It also drops the journal entries `journaled` (charge-journal.ts), where
 * the ledger made the charges durable first. A transaction that fails, its COMMIT included, is rolled
 * back whole and throws: SQLite in process cannot lose the answer of a COMMIT that landed.
 */
export const sqliteCommitWriter: CommitWriter = {
  write(db: Kysely<Database>, charges: readonly Charge[], journaled: readonly number[]): Promise<WrittenCommit> {
    return writeOnHandle(db, (sqlite) => {
      let commit = commits.get(sqlite);
      if (!commit) commits.set(sqlite, (commit = commitOn(sqlite)));
      return commit(charges, journaled);
    });
  },
};
