import type { AccountSnapshot, Charge, LedgerUpdate, PeriodUsage } from './ledger.js';
import { big } from './rows.js';

/**
 * What one group commit says of each account it charged: the account as the commit left it, the
 * usage rows of its keys that the commit wrote (stamped with the account's new sequence number, since
 * they moved in the same transaction), and the generations it recorded.
 */
export function commitUpdates(
  charges: readonly Charge[],
  accounts: ReadonlyMap<string, AccountSnapshot>,
  keyRows: ReadonlyArray<{ key_hash: string; period: string; usage: unknown; byok_usage: unknown }>,
): LedgerUpdate[] {
  const byAccount = new Map<string, { ids: string[]; keys: Map<string, PeriodUsage[]> }>();
  const accountOfKey = new Map<string, string>();
  for (const c of charges) {
    accountOfKey.set(c.keyHash, c.accountId);
    let entry = byAccount.get(c.accountId);
    if (!entry) byAccount.set(c.accountId, (entry = { ids: [], keys: new Map() }));
    entry.ids.push(c.id);
  }
  for (const r of keyRows) {
    const accountId = accountOfKey.get(r.key_hash);
    const snapshot = accountId === undefined ? undefined : accounts.get(accountId);
    const entry = accountId === undefined ? undefined : byAccount.get(accountId);
    if (!snapshot || !entry) continue;
    const periods = entry.keys.get(r.key_hash) ?? [];
    periods.push({ seq: snapshot.seq, period: r.period, usage: big(r.usage), byokUsage: big(r.byok_usage) });
    entry.keys.set(r.key_hash, periods);
  }
  return [...byAccount].map(([accountId, entry]) => {
    const update: LedgerUpdate = { accountId, committed: entry.ids, keys: [...entry.keys].map(([hash, periods]) => ({ hash, periods })) };
    const account = accounts.get(accountId);
    if (account) update.account = account;
    return update;
  });
}
