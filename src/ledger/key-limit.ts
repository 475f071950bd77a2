import type { KeyRecord, KeyUsage, UsageTotals } from './ledger.js';
import type { Nano } from './money.js';

/** The usage that counts against a key's limit: this period's (or all-time), BYOK included when asked. */
export function usageAgainstLimit(key: KeyRecord, usage: KeyUsage): Nano {
  const period: UsageTotals = key.limitReset ? usage[key.limitReset] : usage.all;
  return period.usage + (key.includeByokInLimit ? period.byokUsage : 0n);
}

/** Credits left under the key's cap, or null when it has none. Never below zero. */
export function limitRemaining(key: KeyRecord, usage: KeyUsage): Nano | null {
  if (key.limit === null) return null;
  const left = key.limit - usageAgainstLimit(key, usage);
  return left > 0n ? left : 0n;
}
