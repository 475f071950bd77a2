import type { Charge } from './ledger.js';
import { byText } from './commit-writer.js';

const HOUR_MS = 3_600_000;
/** What a commit adds to one hourly rollup row. */
export interface RollupDelta {
  bucket: number;
  accountId: string;
  keyHash: string;
  model: string;
  provider: string;
  requests: number;
  cost: bigint;
  byokUsage: bigint;
  promptTokens: number;
  completionTokens: number;
}

/**
 * What the charges recorded now (`inserted`; an already recorded one adds nothing) add to the hourly
 * spend rollups, one delta per hour, account, key, model and provider, in the table's key order (the
 * order rows are locked in).
 */
export function rollupDeltas(charges: readonly Charge[], inserted: ReadonlySet<string>): RollupDelta[] {
  const deltas = new Map<string, RollupDelta>();
  for (const c of charges) {
    if (!inserted.has(c.id)) continue;
    const bucket = Math.floor(c.createdAt / HOUR_MS) * HOUR_MS;
    const k = `${bucket}\u0000${c.accountId}\u0000${c.keyHash}\u0000${c.model}\u0000${c.provider}`;
    const d = deltas.get(k);
    if (d) {
      d.requests += 1;
      d.cost += c.totalCost;
      d.byokUsage += c.byokUsage;
      d.promptTokens += c.tokensPrompt;
      d.completionTokens += c.tokensCompletion;
    } else {
      deltas.set(k, {
        bucket,
        accountId: c.accountId,
        keyHash: c.keyHash,
        model: c.model,
        provider: c.provider,
        requests: 1,
        cost: c.totalCost,
        byokUsage: c.byokUsage,
        promptTokens: c.tokensPrompt,
        completionTokens: c.tokensCompletion,
      });
    }
  }
  return [...deltas.values()].sort(
    (a, b) =>
      a.bucket - b.bucket || byText(a.accountId, b.accountId) || byText(a.keyHash, b.keyHash) || byText(a.model, b.model) || byText(a.provider, b.provider),
  );
}
