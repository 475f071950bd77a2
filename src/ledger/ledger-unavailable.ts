import { GatewayError, isGatewayError } from '../errors.js';

/**
 * The one place that decides whether a database failure means "the ledger does not answer" (CONTRACT
 * §8): then the request gets 503 `ledger_unavailable` with Retry-After instead of a 500. Every other
 * database error (a constraint, a bad statement) stays what it is.
 */

/** Socket-level failures: the server is not there, or went away. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNABORTED']);

/** PostgreSQL SQLSTATEs of a server that is going, gone, overloaded or too slow (class 08 is matched whole). */
const POSTGRES_CODES = new Set([
  '57P01', // admin_shutdown: the server is stopping
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: the server is starting or recovering
  '57014', // query_canceled: the statement timeout (the server did not finish in time)
  '53300', // too_many_connections
  '25P03', // idle_in_transaction_session_timeout: the session was ended
]);

/** node-postgres and pg-pool errors that carry no code. */
const DRIVER_MESSAGES = [
  /^Connection terminated/, // unexpectedly; due to connection timeout
  /timeout exceeded when trying to connect/,
  /is not queryable/,
  /Query read timeout/,
];

/** A ledger operation that got no answer within its deadline (see KyselyLedger). */
export class LedgerTimeout extends Error {
  override readonly name = 'LedgerTimeout';
  constructor(ms: number) {
    super(`the database did not answer within ${ms} ms`);
  }
}

/** Whether `err` (or what caused it) says that the database does not answer. */
export function isLedgerUnavailable(err: unknown, depth = 0): boolean {
  if (depth > 4 || typeof err !== 'object' || err === null) return false;
  if (isGatewayError(err)) return false;
  if (err instanceof LedgerTimeout) return true;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (NETWORK_CODES.has(code) || POSTGRES_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  // SQLite: the database stayed locked past its busy timeout.
  if (code === 'SQLITE_BUSY') return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (DRIVER_MESSAGES.some((m) => m.test(message))) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isLedgerUnavailable(inner, depth + 1))) return true;
  return isLedgerUnavailable(e.cause, depth + 1);
}

/** The error a client gets when the ledger does not answer. */
export function ledgerUnavailable(cause?: unknown): GatewayError {
  return new GatewayError('unavailable', 'the ledger (database) does not answer; retry shortly', {
    metadata: { reason: 'ledger_unavailable' },
    headers: { 'retry-after': '2' },
    cause,
  });
}

/** `err` as a client should see it: ledger_unavailable when the database does not answer, else unchanged. */
export function asLedgerError(err: unknown): unknown {
  return isLedgerUnavailable(err) ? ledgerUnavailable(err) : err;
}
