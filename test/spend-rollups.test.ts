import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Charge } from '../src/ledger/ledger.js';
import { rollupDeltas, type RollupDelta } from '../src/ledger/spend-rollups.js';

const HOUR_MS = 3_600_000;

/** The rollups by the plain rule: one per hour, account, key, model and provider, summed, in that order. */
function reference(charges: readonly Charge[], inserted: ReadonlySet<string>): RollupDelta[] {
  const groups = new Map<string, RollupDelta>();
  for (const c of charges) {
    if (!inserted.has(c.id)) continue;
    // The hour the request ended (it is charged then).
    const bucket = Math.floor((c.createdAt + c.latencyMs) / HOUR_MS) * HOUR_MS;
    const k = JSON.stringify([bucket, c.accountId, c.keyHash, c.model, c.provider]);
    const d = groups.get(k) ?? {
      bucket,
      accountId: c.accountId,
      keyHash: c.keyHash,
      model: c.model,
      provider: c.provider,
      requests: 0,
      cost: 0n,
      byokUsage: 0n,
      promptTokens: 0,
      completionTokens: 0,
    };
    d.requests += 1;
    d.cost += c.totalCost;
    d.byokUsage += c.byokUsage;
    d.promptTokens += c.tokensPrompt;
    d.completionTokens += c.tokensCompletion;
    groups.set(k, d);
  }
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...groups.values()].sort(
    (a, b) => a.bucket - b.bucket || cmp(a.accountId, b.accountId) || cmp(a.keyHash, b.keyHash) || cmp(a.model, b.model) || cmp(a.provider, b.provider),
  );
}

describe('spend rollups of a commit', () => {
  it('one delta per hour, account, key, model and provider, summed exactly, in the table key order; charges not inserted add nothing', () => {
    const charge = fc.record({
      id: fc.integer({ min: 0, max: 40 }).map((n) => `gen-${n}`),
      accountId: fc.constantFrom('a1', 'a2'),
      keyHash: fc.constantFrom('k1', 'k2', 'k3'),
      model: fc.constantFrom('m/x', 'm/y'),
      provider: fc.constantFrom('p1', 'p2'),
      tokensPrompt: fc.nat({ max: 10_000 }),
      tokensCompletion: fc.nat({ max: 10_000 }),
      totalCost: fc.bigInt({ min: 0n, max: 10n ** 12n }),
      byokUsage: fc.bigInt({ min: 0n, max: 10n ** 12n }),
      createdAt: fc.integer({ min: 0, max: 4 * HOUR_MS }),
      latencyMs: fc.constantFrom(0, 1, 65_000, HOUR_MS),
    });
    fc.assert(
      fc.property(fc.array(charge, { maxLength: 60 }), fc.array(fc.integer({ min: 0, max: 40 })), (list, ids) => {
        const charges = list.map((c) => ({ ...c, isByok: false, streamed: false, cancelled: false, finishReason: 'stop', usageSource: 'upstream' }) as Charge);
        const inserted = new Set(ids.map((n) => `gen-${n}`));
        expect(rollupDeltas(charges, inserted)).toEqual(reference(charges, inserted));
      }),
      { numRuns: 500 },
    );
  });
});
