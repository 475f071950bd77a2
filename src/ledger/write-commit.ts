import type { Kysely } from 'kysely';
import { byText, type CommitWriter, type KeyUsageRow } from './commit-writer.js';
import { commitUpdates } from './commit-updates.js';
import type { AccountSnapshot, Charge, LedgerUpdate } from './ledger.js';
import type { Database } from './schema.js';
import { big } from './rows.js';

/**
 * One group commit: `writer` writes the charges (see CommitWriter for what and in which order; it drops
 * the journal entries `journaled`), and the answer says what the commit did to each account it charged
 * (see commitUpdates), for the limits store.
 */
export async function writeCommit(
  db: Kysely<Database>,
  writer: CommitWriter,
  batch: readonly Charge[],
  journaled: readonly number[] = [],
): Promise<LedgerUpdate[]> {
  // Each generation once (charge() never queues one twice; a batch that held one twice would move its
  // money twice, since both copies would count as recorded now).
  const sorted = [...batch].sort((a, b) => byText(a.id, b.id)).filter((c, i, all) => i === 0 || all[i - 1]?.id !== c.id);
  const { recorded, accounts, keyRows } = await writer.write(db, sorted, journaled);
  if (recorded.size < sorted.length) await readUnmoved(db, sorted, recorded, accounts, keyRows);
  return commitUpdates(sorted, accounts, keyRows);
}

/**
 * Charges recorded by an earlier commit (whose answer was lost, or made by another process: a start
 * applying a journal's leftovers) moved nothing now: their accounts that this commit did not move,
 * and their keys whose usage it did not write, are read as they stand (in one transaction that sees
 * one snapshot), so that what this commit reports covers every charge in it and the limits store,
 * dropping their pending charges, keeps their usage. Rare: the query builder is fine here.
 */
async function readUnmoved(
  db: Kysely<Database>,
  charges: readonly Charge[],
  recorded: ReadonlySet<string>,
  snapshots: Map<string, AccountSnapshot>,
  keyRows: KeyUsageRow[],
): Promise<void> {
  const earlier = charges.filter((c) => !recorded.has(c.id));
  const unmoved = [...new Set(earlier.map((c) => c.accountId))].filter((id) => !snapshots.has(id));
  const written = new Set(keyRows.map((r) => r.key_hash));
  const keys = [...new Set(earlier.map((c) => c.keyHash))].filter((hash) => !written.has(hash));
  if (unmoved.length === 0 && keys.length === 0) return;
  await db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      if (unmoved.length > 0) {
        const rows = await trx.selectFrom('accounts').select(['id', 'seq', 'balance', 'total_usage']).where('id', 'in', unmoved).execute();
        for (const r of rows) snapshots.set(r.id, { seq: big(r.seq), balance: big(r.balance), totalUsage: big(r.total_usage) });
      }
      if (keys.length > 0)
        keyRows.push(...(await trx.selectFrom('key_usage').select(['key_hash', 'period', 'usage', 'byok_usage']).where('key_hash', 'in', keys).execute()));
    });
}
