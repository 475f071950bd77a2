/**
 * The one place that decides whether a failed write of charges is about their values (a number out of
 * range, a constraint): the only failure after which the ledger asks whether the database refuses
 * just these charges (KyselyLedger: it rehearses a charge of nothing for the same account and key) and,
 * if so, sets them aside after a few tries. Any other failure (a full disk, an I/O error, a read-only
 * database, a server that does not answer) is the database's: the charges are kept and tried again,
 * never set aside.
 */

/** SQLite result codes about the values written (extended codes start with these). */
const SQLITE_VALUE_CODES = ['SQLITE_CONSTRAINT', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG', 'SQLITE_RANGE'];

/** PostgreSQL SQLSTATE classes about the values written: 22 data exception, 23 integrity constraint violation. */
const POSTGRES_VALUE_CLASS = /^2[23][0-9A-Z]{3}$/;

/** Whether `err` says that the database, or its driver, refused the values written. */
export function isValueRefusal(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  // Thrown before the statement reached the database: a value the driver cannot bind (better-sqlite3:
  // "The bound string, buffer, or bigint is too big"), or one the group commit's literals refuse.
  if (err instanceof RangeError || err instanceof TypeError) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string') return false;
  return SQLITE_VALUE_CODES.some((c) => code === c || code.startsWith(`${c}_`)) || POSTGRES_VALUE_CLASS.test(code);
}
