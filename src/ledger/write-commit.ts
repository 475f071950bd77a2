import type { Kysely } from 'kysely';
import type { AccountDelta, CommitSteps, KeyUsageRow, UsageDelta } from './commit-steps.js';
import { commitUpdates } from './commit-updates.js';
import type { AccountSnapshot, Charge, LedgerUpdate } from './ledger.js';
import { periodKeys } from './periods.js';
import type { Database } from './schema.js';

const big = (v: unknown): bigint => (typeof v === 'bigint' ? v : BigInt(String(v)));
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What the charges recorded now add to each account and to each key's usage per period, in lock order. */
function deltasOf(charges: readonly Charge[], inserted: ReadonlySet<string>): { accounts: AccountDelta[]; usage: UsageDelta[] } {
  const accounts = new Map<string, AccountDelta>();
  const usage = new Map<string, UsageDelta>();
  for (const c of charges) {
    if (!inserted.has(c.id)) continue; // already recorded: never charge twice
    const a = accounts.get(c.accountId);
    if (a) a.cost += c.totalCost;
    else accounts.set(c.accountId, { accountId: c.accountId, cost: c.totalCost });
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
    accounts: [...accounts.values()].sort((a, b) => byText(a.accountId, b.accountId)),
    usage: [...usage.values()].sort((a, b) => byText(a.keyHash, b.keyHash) || byText(a.period, b.period)),
  };
}

/**
 * What one group commit writes, on its transaction `trx`: the generations first (one already recorded
 * is skipped, so that no charge is ever applied twice), then the balances and the key usage of the
 * ones recorded now, rows in a fixed order (accounts by id, then key usage by key and period). Answers
 * what the commit says of each account it charged (see commitUpdates), for after COMMIT.
 */
export async function writeCommit(trx: Kysely<Database>, steps: CommitSteps, batch: readonly Charge[]): Promise<LedgerUpdate[]> {
  const sorted = [...batch].sort((a, b) => byText(a.id, b.id));
  const inserted = await steps.insertGenerations(trx, sorted);
  const deltas = deltasOf(sorted, inserted);
  const snapshots = await steps.chargeAccounts(trx, deltas.accounts);
  const keyRows = await steps.addKeyUsage(trx, deltas.usage);
  if (inserted.size < sorted.length) await readUnmoved(trx, sorted, inserted, snapshots, keyRows);
  return commitUpdates(sorted, snapshots, keyRows);
}

/**
 * Charges recorded by an earlier COMMIT whose answer was lost moved nothing now: their accounts and
 * keys are read as they stand, so that what this commit reports covers every charge in it. (Rare: the
 * query builder is fine here.)
 */
async function readUnmoved(
  trx: Kysely<Database>,
  charges: readonly Charge[],
  inserted: ReadonlySet<string>,
  snapshots: Map<string, AccountSnapshot>,
  keyRows: KeyUsageRow[],
): Promise<void> {
  const earlier = charges.filter((c) => !inserted.has(c.id));
  const unmoved = [...new Set(earlier.map((c) => c.accountId))].filter((id) => !snapshots.has(id));
  if (unmoved.length === 0) return;
  const rows = await trx.selectFrom('accounts').select(['id', 'seq', 'balance', 'total_usage']).where('id', 'in', unmoved).execute();
  for (const r of rows) snapshots.set(r.id, { seq: big(r.seq), balance: big(r.balance), totalUsage: big(r.total_usage) });
  const keys = [...new Set(earlier.map((c) => c.keyHash))];
  keyRows.push(...(await trx.selectFrom('key_usage').select(['key_hash', 'period', 'usage', 'byok_usage']).where('key_hash', 'in', keys).execute()));
}
