import type { ControlledTransaction, Kysely } from 'kysely';
import { GENERATION_COLUMNS, generationValues, type CommitWriter, type KeyUsageRow, type WrittenCommit } from './commit-writer.js';
import type { AccountSnapshot, Charge } from './ledger.js';
import type { Nano } from './money.js';
import { periodKeys } from './periods.js';
import { preparedQuery } from './prepared-query.js';
import { rollupDeltas } from './spend-rollups.js';
import type { Database } from './schema.js';

const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(String(v)));
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const insertGeneration = preparedQuery<{ id: string }>(
  `INSERT INTO generations (${GENERATION_COLUMNS.join(', ')}) VALUES (${GENERATION_COLUMNS.map(() => '?').join(', ')})
   ON CONFLICT (id) DO NOTHING RETURNING id`,
);
const chargeAccount = preparedQuery<{ seq: unknown; balance: unknown; total_usage: unknown }>(
  `UPDATE accounts SET balance = balance - ?, total_usage = total_usage + ?, seq = seq + 1 WHERE id = ?
   RETURNING seq, balance, total_usage`,
);
const addRollup = preparedQuery(
  `INSERT INTO spend_hourly (bucket, account_id, key_hash, model, provider, requests, cost, byok_usage, prompt_tokens, completion_tokens)
   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (bucket, account_id, key_hash, model, provider) DO UPDATE SET requests = spend_hourly.requests + excluded.requests,
     cost = spend_hourly.cost + excluded.cost, byok_usage = spend_hourly.byok_usage + excluded.byok_usage,
     prompt_tokens = spend_hourly.prompt_tokens + excluded.prompt_tokens, completion_tokens = spend_hourly.completion_tokens + excluded.completion_tokens`,
);
const addKeyUsage = preparedQuery<KeyUsageRow>(
  `INSERT INTO key_usage (key_hash, period, usage, byok_usage) VALUES (?, ?, ?, ?)
   ON CONFLICT (key_hash, period) DO UPDATE SET usage = key_usage.usage + excluded.usage, byok_usage = key_usage.byok_usage + excluded.byok_usage
   RETURNING key_hash, period, usage, byok_usage`,
);

interface UsageDelta {
  keyHash: string;
  period: string;
  usage: Nano;
  byokUsage: Nano;
}

/** What the charges recorded now add to each account and to each key's usage per period, in lock order. */
function deltasOf(charges: readonly Charge[], recorded: ReadonlySet<string>): { accounts: Array<[string, Nano]>; usage: UsageDelta[] } {
  const accounts = new Map<string, Nano>();
  const usage = new Map<string, UsageDelta>();
  for (const c of charges) {
    if (!recorded.has(c.id)) continue; // already recorded: never charge twice
    accounts.set(c.accountId, (accounts.get(c.accountId) ?? 0n) + c.totalCost);
    const p = periodKeys(c.createdAt);
    for (const period of [p.all, p.daily, p.weekly, p.monthly]) {
      const k = `${c.keyHash}\u0000${period}`;
      const d = usage.get(k);
      if (d) {
        d.usage += c.totalCost;
        d.byokUsage += c.byokUsage;
      } else usage.set(k, { keyHash: c.keyHash, period, usage: c.totalCost, byokUsage: c.byokUsage });
    }
  }
  return {
    accounts: [...accounts].sort(([a], [b]) => byText(a, b)),
    usage: [...usage.values()].sort((a, b) => byText(a.keyHash, b.keyHash) || byText(a.period, b.period)),
  };
}

/** Ends a transaction that failed and gives its connection back; a rollback that fails itself is let go. */
async function rollback(trx: ControlledTransaction<Database>): Promise<void> {
  await trx
    .rollback()
    .execute()
    .catch(() => undefined);
}

/**
 * A group commit on SQLite: one transaction, with one single-row statement per row, each prepared once
 * (better-sqlite3 runs a prepared statement in a few microseconds, in process, so rows cost less one by
 * one than a multi-row statement's text and binding would).
 */
export const sqliteCommitWriter: CommitWriter = {
  async write(db: Kysely<Database>, charges: readonly Charge[]): Promise<WrittenCommit> {
    const trx = await db.startTransaction().execute();
    const written: WrittenCommit = { recorded: new Set(), accounts: new Map<string, AccountSnapshot>(), keyRows: [] };
    try {
      const recorded = new Set<string>();
      for (const c of charges) {
        const { rows } = await trx.executeQuery(insertGeneration(generationValues(c)));
        if (rows.length > 0) recorded.add(c.id);
      }
      written.recorded = recorded;
      const deltas = deltasOf(charges, recorded);
      for (const [accountId, cost] of deltas.accounts) {
        const { rows } = await trx.executeQuery(chargeAccount([cost, cost, accountId]));
        const r = rows[0];
        if (r) written.accounts.set(accountId, { seq: big(r.seq), balance: big(r.balance), totalUsage: big(r.total_usage) });
      }
      for (const d of deltas.usage) written.keyRows.push(...(await trx.executeQuery(addKeyUsage([d.keyHash, d.period, d.usage, d.byokUsage]))).rows);
      // The spend rollups reports read, last, in their key order.
      for (const r of rollupDeltas(charges, recorded)) {
        await trx.executeQuery(
          addRollup([r.bucket, r.accountId, r.keyHash, r.model, r.provider, r.requests, r.cost, r.byokUsage, r.promptTokens, r.completionTokens]),
        );
      }
    } catch (err) {
      await rollback(trx);
      throw err;
    }
    // A COMMIT that fails may still have landed: the charges stay pending and are written again, and a
    // generation already recorded is skipped.
    try {
      await trx.commit().execute();
    } catch (err) {
      // Kysely keeps the connection of a failed COMMIT checked out: the rollback gives it back (even
      // when it fails itself), so that failures do not lock the database for good.
      await rollback(trx);
      throw err;
    }
    return written;
  },
};
