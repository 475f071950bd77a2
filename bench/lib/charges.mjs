// The charge every bench request makes (260 prompt and 20 completion tokens of bench/paid: 0.0003
// credits), as the ledger takes it, for the benches that write charges without the HTTP path.

/** A charge of 0.0003 credits with the given id, account, key and time. */
export function benchCharge({ id, accountId, keyHash, createdAt, streamed = false }) {
  return {
    id,
    accountId,
    keyHash,
    model: 'bench/paid',
    provider: 'bench',
    tokensPrompt: 260,
    tokensCompletion: 20,
    totalCost: 300_000n,
    byokUsage: 0n,
    isByok: false,
    streamed,
    cancelled: false,
    finishReason: 'stop',
    usageSource: 'upstream',
    createdAt,
    latencyMs: 5,
  };
}
