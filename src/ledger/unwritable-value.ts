import type { Charge } from './ledger.js';

/** The range of the ledger's `bigint` columns (money, times). */
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
/** The range of its `integer` columns (tokens, latency): PostgreSQL's `integer` is 32 bits. */
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** The furthest a JavaScript date reaches from the epoch, in ms: the periods a charge is counted in are computed from it. */
const DATE_MAX_MS = 8.64e15;

/** A charge's texts stored as they are, by column (the finish reason is stored with a NUL replaced). */
const textsOf = (c: Charge): Array<[string, string | null]> => [
  ['id', c.id],
  ['account_id', c.accountId],
  ['key_hash', c.keyHash],
  ['model', c.model],
  ['provider', c.provider],
  ['usage_source', c.usageSource],
];

const bigintOutside = (v: bigint) => v < INT64_MIN || v > INT64_MAX;
const integerOutside = (v: number, min: number, max: number) => !Number.isSafeInteger(v) || v < min || v > max;

/**
 * What in `charge` the ledger cannot write (a value past its column's range in the stricter of the two
 * databases' types, a number that is not a whole one, a time past JavaScript's dates, a text with a NUL
 * PostgreSQL refuses), named, or undefined when every value fits. Decided from the charge alone, so
 * that when a charge failed with no other charge written beside it the ledger can tell one it cannot
 * write (set aside after its tries, logged for replay) from a database that refuses every write for
 * now: a rule, a trigger, a full disk or a server that does not answer is then never taken for the
 * charge's own fault. The gateway makes no such charge itself; one can come in through a replayed log.
 */
export function unwritableValue(charge: Charge): string | undefined {
  if (bigintOutside(charge.totalCost)) return `total_cost ${charge.totalCost} is outside a 64-bit integer`;
  if (bigintOutside(charge.byokUsage)) return `byok_usage ${charge.byokUsage} is outside a 64-bit integer`;
  if (integerOutside(charge.createdAt, -DATE_MAX_MS, DATE_MAX_MS))
    return `created_at ${charge.createdAt} is not a time (whole milliseconds within JavaScript's dates)`;
  if (integerOutside(charge.tokensPrompt, INT32_MIN, INT32_MAX)) return `tokens_prompt ${charge.tokensPrompt} is not a 32-bit integer`;
  if (integerOutside(charge.tokensCompletion, INT32_MIN, INT32_MAX)) return `tokens_completion ${charge.tokensCompletion} is not a 32-bit integer`;
  if (integerOutside(charge.latencyMs, INT32_MIN, INT32_MAX)) return `latency_ms ${charge.latencyMs} is not a 32-bit integer`;
  // PostgreSQL's text holds no NUL.
  for (const [column, text] of textsOf(charge)) if (text?.includes('\u0000')) return `${column} holds a NUL character`;
  return undefined;
}
