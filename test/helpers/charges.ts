import type { Charge } from '../../src/ledger/ledger.js';

/**
 * Charges for ledger tests: each call a new generation (`gen-PREFIX-N`), one prompt and one completion
 * token, the cost given, made at `at`; `extra` replaces any field.
 */
export function chargeMaker(prefix: string, t0: number): (accountId: string, keyHash: string, cost: bigint, at?: number, extra?: Partial<Charge>) => Charge {
  let seq = 0;
  return (accountId, keyHash, cost, at = t0, extra = {}) => {
    seq += 1;
    return {
      id: `gen-${prefix}-${seq}`,
      accountId,
      keyHash,
      model: 'm',
      provider: 'p',
      tokensPrompt: 1,
      tokensCompletion: 1,
      totalCost: cost,
      byokUsage: 0n,
      isByok: false,
      streamed: false,
      cancelled: false,
      finishReason: 'stop',
      usageSource: 'upstream',
      createdAt: at,
      latencyMs: 5,
      ...extra,
    };
  };
}
