import type { Charge } from './ledger.js';

/** The range of the ledger's `bigint` columns (money, times). */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** The range of its `integer` columns (tokens, latency): PostgreSQL's `integer` is 32 bits. */
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

const bigintOutside = (v: bigint) => v < INT64_MIN || v > INT64_MAX;
const integerOutside = (v: number, min: number, max: number) => !Number.isSafeInteger(v) || v < min || v > max;

/**
 * What in `charge` no column of the ledger can hold (a value past its column's range, or a number
 * that is not a whole one), named, or undefined when every value fits. Decided from the charge alone,
 * in the strictest of the two databases' column types, so that the ledger can tell a charge that can
 * never be written (it is set aside after its tries, logged for replay) from a database that refuses
 * every write for now, when the charge failed with no other charge written beside it: a rule, a
 * trigger, a full disk or a server that does not answer is never taken for the charge's own fault.
 */
export function unwritableValue(charge: Charge): string | undefined {
  if (bigintOutside(charge.totalCost)) return `total_cost ${charge.totalCost} is outside a 64-bit integer`;
  if (bigintOutside(charge.byokUsage)) return `byok_usage ${charge.byokUsage} is outside a 64-bit integer`;
  if (integerOutside(charge.createdAt, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)) return `created_at ${charge.createdAt} is not a whole number`;
  if (integerOutside(charge.tokensPrompt, INT32_MIN, INT32_MAX)) return `tokens_prompt ${charge.tokensPrompt} is not a 32-bit integer`;
  if (integerOutside(charge.tokensCompletion, INT32_MIN, INT32_MAX)) return `tokens_completion ${charge.tokensCompletion} is not a 32-bit integer`;
  if (integerOutside(charge.latencyMs, INT32_MIN, INT32_MAX)) return `latency_ms ${charge.latencyMs} is not a 32-bit integer`;
  return undefined;
}
