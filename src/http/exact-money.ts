import { isLosslessNumber, parse } from 'lossless-json';
import { DecimalText } from '../admin/parse-input.js';

/** The fields of an admin or management body that carry credits. */
const MONEY_FIELDS = ['amount', 'limit'] as const;

/**
 * The body with its top-level money fields (`amount`, `limit`) as the exact text the client wrote (DecimalText),
 * not the nearest double JSON.parse made of it: 123456789.123456789 is 17 significant digits, more
 * than a double carries, yet within the contract's 9 decimals and 1e9 (CONTRACT §4). Other fields,
 * and a body without money in it, are left as they are.
 */
export function withExactMoney(body: unknown, raw: string | undefined): unknown {
  if (raw === undefined || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const fields = MONEY_FIELDS.filter((f) => typeof (body as Record<string, unknown>)[f] === 'number');
  if (fields.length === 0) return body;
  // The body parsed already (JSON.parse), but lossless-json refuses some of what JSON.parse takes (a
  // key written twice with two values, nesting deeper than its stack): then the numbers stay doubles.
  let exact: Record<string, unknown>;
  try {
    exact = parse(raw) as Record<string, unknown>;
  } catch {
    return body;
  }
  const out: Record<string, unknown> = { ...body };
  for (const f of fields) {
    const value = exact[f];
    if (isLosslessNumber(value)) out[f] = new DecimalText(value.value);
  }
  return out;
}
