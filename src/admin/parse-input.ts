import { z } from 'zod';
import { invalidRequest } from '../errors.js';
import { creditsFromJson, MoneyFormatError, type Nano } from '../ledger/money.js';

const MAX_AMOUNT = creditsFromJson(1_000_000_000);

export const isoDate = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time, e.g. 2026-01-31T00:00:00Z' });
export const money = z.number({ error: 'must be a number' });

/** `body` (or a query) read with `schema`; else a 400 naming the first field that is wrong. */
export function parseInput<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const path = issue?.path.length ? issue.path.join('.') : 'body';
  const message = issue?.code === 'unrecognized_keys' ? `unknown field ${issue.keys.map((k) => `"${k}"`).join(', ')}` : issue?.message;
  throw invalidRequest(`${path}: ${message ?? 'invalid value'}`, { field: path });
}

/** An amount from JSON as exact nanocredits: at most 9 decimals and 1,000,000,000 in size. */
export function amountOf(field: string, value: number, allowNegative: boolean): Nano {
  let amount: Nano;
  try {
    amount = creditsFromJson(value);
  } catch (err) {
    if (err instanceof MoneyFormatError) throw invalidRequest(`${field}: must have at most 9 decimals`, { field });
    throw err;
  }
  const abs = amount < 0n ? -amount : amount;
  if (abs > MAX_AMOUNT) throw invalidRequest(`${field}: must be at most 1000000000 in size`, { field });
  if (!allowNegative && amount < 0n) throw invalidRequest(`${field}: must not be negative`, { field });
  return amount;
}
