import type { Charge } from './ledger.js';
import { byText } from './commit-writer.js';
import { chargedAt } from './periods.js';

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
  // By key hash, then a short list (the key's hours, models and providers in this commit, usually one):
  // a composite key string would be built and hashed anew for every charge.
  const byKey = new Map<string, RollupDelta[]>();
  const deltas: RollupDelta[] = [];
  for (const c of charges) {
    if (!inserted.has(c.id)) continue;
    // The hour it was charged in (its request's end), as its key's usage periods count it.
    const bucket = Math.floor(chargedAt(c) / HOUR_MS) * HOUR_MS;
    let ofKey = byKey.get(c.keyHash);
    if (!ofKey) {
      ofKey = [];
      byKey.set(c.keyHash, ofKey);
    }
    const d = ofKey.find((x) => x.bucket === bucket && x.accountId === c.accountId && x.model === c.model && x.provider === c.provider);
    if (d) {
      d.requests += 1;
      d.cost += c.totalCost;
      d.byokUsage += c.byokUsage;
      d.promptTokens += c.tokensPrompt;
      d.completionTokens += c.tokensCompletion;
    } else {
      const delta: RollupDelta = {
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
      };
      ofKey.push(delta);
      deltas.push(delta);
    }
  }
  return deltas.sort(
    (a, b) =>
      a.bucket - b.bucket || byText(a.accountId, b.accountId) || byText(a.keyHash, b.keyHash) || byText(a.model, b.model) || byText(a.provider, b.provider),
  );
}
