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

/** The balance and total usage as every process sees them: the snapshot less what is pending (`pendingCost`). */
export function moneyOf(account: AccountSnapshot, pendingCost: Nano): { balance: Nano; totalUsage: Nano } {
  return { balance: account.balance - pendingCost, totalUsage: account.totalUsage + pendingCost };
}

/** A key's usage and BYOK usage in one period: charged (the snapshot) and pending. */
export function keyPeriodUsage(field: UsageField, pending: { usage: Nano; byokUsage: Nano }): { usage: Nano; byokUsage: Nano } {
  return { usage: field.usage + pending.usage, byokUsage: field.byokUsage + pending.byokUsage };
}

/** What counts against the key's limit in its period: charged and pending, BYOK usage when the key includes it. */
export function keyUsed(field: UsageField, includeByok: boolean, pending: { usage: Nano; byokUsage: Nano }): Nano {
  const u = keyPeriodUsage(field, pending);
  return u.usage + (includeByok ? u.byokUsage : 0n);
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
