import type { Nano } from '../ledger/money.js';
import type { AccountSnapshot, ChargePeriods } from './hold-store.js';

/**
 * The arithmetic of the money view, shared by the stores that keep it in process (the Redis store
 * does the same in its Lua script, on split integers).
 */

/** A request's actual cost, ended but not yet recorded by a ledger commit. */
export interface PendingCharge {
  cost: Nano;
  byokUsage: Nano;
  keyHash: string;
  periods: ChargePeriods;
}

/** A key's usage in one period as the ledger last said. */
export interface UsageField {
  seq: bigint;
  usage: Nano;
  byokUsage: Nano;
}

/** The balance and total usage as every process sees them: the snapshot less what is pending. */
export function moneyOf(account: AccountSnapshot, pending: Iterable<PendingCharge>): { balance: Nano; totalUsage: Nano } {
  let balance = account.balance;
  let totalUsage = account.totalUsage;
  for (const p of pending) {
    balance -= p.cost;
    totalUsage += p.cost;
  }
  return { balance, totalUsage };
}

/** Whether a pending charge counts in `period` (`all`, `d:…`, `w:…`, `m:…`). */
export function countsIn(p: PendingCharge, period: string): boolean {
  if (period === 'all') return true;
  return p.periods.daily === period || p.periods.weekly === period || p.periods.monthly === period;
}

/** A key's usage and BYOK usage in `period`: charged (the snapshot) and pending. */
export function keyPeriodUsage(field: UsageField, hash: string, period: string, pending: Iterable<PendingCharge>): { usage: Nano; byokUsage: Nano } {
  let usage = field.usage;
  let byokUsage = field.byokUsage;
  for (const p of pending) {
    if (p.keyHash !== hash || !countsIn(p, period)) continue;
    usage += p.cost;
    byokUsage += p.byokUsage;
  }
  return { usage, byokUsage };
}

/** What counts against the key's limit in `period`: charged and pending, BYOK usage when the key includes it. */
export function keyUsed(field: UsageField, key: { hash: string; period: string; includeByok: boolean }, pending: Iterable<PendingCharge>): Nano {
  const u = keyPeriodUsage(field, key.hash, key.period, pending);
  return u.usage + (key.includeByok ? u.byokUsage : 0n);
}

/**
 * The in-flight budget at `balance`: min(balance × fractionPpm / 10⁶, ceiling), never below zero;
 * undefined when the balance is at or above the threshold (not subject to the budget).
 */
export function budgetOf(rule: { threshold: Nano; fractionPpm: bigint; ceiling: Nano }, balance: Nano): Nano | undefined {
  if (balance >= rule.threshold) return undefined;
  if (balance <= 0n) return 0n;
  const share = (balance * rule.fractionPpm) / 1_000_000n;
  return share < rule.ceiling ? share : rule.ceiling;
}
