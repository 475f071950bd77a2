import type { Kysely } from 'kysely';
import { GENERATION_COLUMNS, generationValues, type AccountDelta, type CommitSteps, type KeyUsageRow, type UsageDelta } from './commit-steps.js';
import type { AccountSnapshot, Charge } from './ledger.js';
import { preparedQuery } from './prepared-query.js';
import type { Database } from './schema.js';

const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(String(v)));

const insertGeneration = preparedQuery<{ id: string }>(
  `INSERT INTO generations (${GENERATION_COLUMNS.join(', ')}) VALUES (${GENERATION_COLUMNS.map(() => '?').join(', ')})
   ON CONFLICT (id) DO NOTHING RETURNING id`,
);
const chargeAccount = preparedQuery<{ seq: unknown; balance: unknown; total_usage: unknown }>(
  `UPDATE accounts SET balance = balance - ?, total_usage = total_usage + ?, seq = seq + 1 WHERE id = ?
   RETURNING seq, balance, total_usage`,
);
const addKeyUsage = preparedQuery<KeyUsageRow>(
  `INSERT INTO key_usage (key_hash, period, usage, byok_usage) VALUES (?, ?, ?, ?)
   ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, byok_usage = key_usage.byok_usage + excluded.byok_usage
   RETURNING key_hash, period, usage, byok_usage`,
);

/**
 * A group commit on SQLite: one single-row statement per row, each prepared once (better-sqlite3 runs
 * a prepared statement in a few microseconds, in process, so rows cost less one by one than a
 * multi-row statement's text and binding would). SQLite has one writer at a time: the transaction
 * holds the whole database, so the order of rows cannot deadlock.
 */
export const sqliteCommitSteps: CommitSteps = {
  async insertGenerations(trx: Kysely<Database>, charges: readonly Charge[]): Promise<Set<string>> {
    const inserted = new Set<string>();
    for (const c of charges) {
      const { rows } = await trx.executeQuery(insertGeneration(generationValues(c)));
      if (rows.length > 0) inserted.add(c.id);
    }
    return inserted;
  },

  async chargeAccounts(trx: Kysely<Database>, deltas: readonly AccountDelta[]): Promise<Map<string, AccountSnapshot>> {
    const snapshots = new Map<string, AccountSnapshot>();
    for (const d of deltas) {
      const { rows } = await trx.executeQuery(chargeAccount([d.cost, d.cost, d.accountId]));
      const r = rows[0];
      if (r) snapshots.set(d.accountId, { seq: big(r.seq), balance: big(r.balance), totalUsage: big(r.total_usage) });
    }
    return snapshots;
  },

  async addKeyUsage(trx: Kysely<Database>, deltas: readonly UsageDelta[]): Promise<KeyUsageRow[]> {
    const out: KeyUsageRow[] = [];
    for (const d of deltas) {
      const { rows } = await trx.executeQuery(addKeyUsage([d.keyHash, d.period, d.usage, d.byokUsage]));
      out.push(...rows);
    }
    return out;
  },
};
