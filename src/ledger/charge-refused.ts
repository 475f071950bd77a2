import { ArrayElementError } from './postgres-array.js';

/**
 * The one place that decides whether a failed write of charges failed on a value that could not be
 * sent at all: bound by the driver, or cast to its column's type (a number out of range, a text too
 * long), before any row or rule of the tables saw it. Only after such a failure does the ledger ask
 * whether the database takes other charges of the same account and key (KyselyLedger rehearses one)
 * and, if so, set the charge aside after a few tries. A constraint or a trigger is never taken for
 * the charge's own fault (a rule that every charge breaks would look the same, and a rehearsal of
 * another charge cannot tell them apart), nor is a full disk, an I/O error, a read-only database or a
 * server that does not answer: those charges are kept and tried again.
 */

/** SQLite result codes of a value that cannot be stored: too large, or of a type its column cannot take. */
const SQLITE_VALUE_CODES = new Set(['SQLITE_TOOBIG', 'SQLITE_MISMATCH']);

/** PostgreSQL's SQLSTATE class 22, data exception: a value its column's type cannot hold (22003 numeric out of range, …). */
const POSTGRES_DATA_EXCEPTION = /^22[0-9A-Z]{3}$/;

/** better-sqlite3's refusal to bind a value (a bigint past 64 bits, a string or buffer past SQLite's limit). */
const UNBINDABLE = /^The bound string, buffer, or bigint is too big/;

/** Whether `err` says that a value written could not be sent to its column. */
export function isValueRefusal(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  if (err instanceof RangeError) return UNBINDABLE.test(err.message);
  // The group commit's array literals refuse a value before the statement is sent (postgres-array.ts).
  if (err instanceof ArrayElementError || (err instanceof TypeError && err.cause instanceof ArrayElementError)) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return SQLITE_VALUE_CODES.has(code) || POSTGRES_DATA_EXCEPTION.test(code);
}
