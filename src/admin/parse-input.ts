import { z } from 'zod';
import { invalidRequest } from '../errors.js';
import { creditsFromJson, creditsFromText, MoneyFormatError, type Nano } from '../ledger/money.js';

const MAX_AMOUNT = creditsFromJson(1_000_000_000);

export const isoDate = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z' });
/**
 * A number as written, its decimal text: what a client's JSON body held (http/exact-money.ts) or the
 * CLI was given, before any double rounds it. Made in process only: a JSON string is not one.
 */
export class DecimalText {
  constructor(readonly text: string) {}
}

/** Credits: a JSON number, or (in process) its exact text; documented as a number. */
export const money = z.union([z.number(), z.instanceof(DecimalText)], { error: 'must be a number' });

/** `body` (or a query) read with `schema`; else a 400 naming the first field that is wrong. */
export function parseInput<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.length ? issue.path.join('.') : 'body';
  const message = issue?.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue?.message;
  throw invalidRequest(`${path}: ${message ?? 'invalid value'}`, { field: path });
}

/**
 * An amount as exact nanocredits: at most 9 decimals and 1,000,000,000 in size. Text (what the
 * client wrote: withExactMoney, or the CLI's argument) is read exactly; a number as its double.
 */
export function amountOf(field: string, value: number | DecimalText, allowNegative: boolean): Nano {
  let amount: Nano;
  try {
    amount = value instanceof DecimalText ? creditsFromText(value.text) : creditsFromJson(value);
  } catch (err) {
    if (!(err instanceof MoneyFormatError)) throw err;
    if (/decimals/.test(err.message)) throw invalidRequest(`${field}: must have at most 9 decimals`, { field });
    throw invalidRequest(`${field}: must be a number (at most 9 decimals and 1000000000 in size)`, { field });
  }
  const abs = amount < 0n ? -amount : amount;
  if (abs > MAX_AMOUNT) throw invalidRequest(`${field}: must be at most 1000000000 in size`, { field });
  if (!allowNegative && amount < 0n) throw invalidRequest(`${field}: must not be negative`, { field });
  return amount;
}
