import type { ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.js';

/** The status a request is counted and logged with when the client left before any answer (nginx's 499). */
const CLIENT_CLOSED_REQUEST = 499;

/** What a closed response answered: the status sent, or 499 when none was (Node's default 200 is not one). */
export function closedStatus(res: ServerResponse): number {
  return res.headersSent ? res.statusCode : CLIENT_CLOSED_REQUEST;
}

/** One request's access-log line, as its response closed. */
export interface AccessLine {
  reqId: string;
  method: string | undefined;
  url: string | undefined;
  status: number;
  /** From the request's arrival to the response's close. */
  ms: number;
  /** What the route adds: the key, the account, the model, why it failed. */
  fields: Record<string, unknown> | undefined;
}

/**
 * Writes one access-log line a request, streamed or not (CONTRACT §10): method, path (query left out),
 * status, time, and whether the client left before the end (`res` did not finish). Never a header. Not
 * built for a level that is off.
 */
export function writeAccessLine(logger: Logger, res: ServerResponse, line: AccessLine): void {
  const level = line.status >= 500 ? 'warn' : 'info';
  if (!logger.isLevelEnabled(level)) return;
  const path = (line.url ?? '').split('?')[0];
  const fields = { reqId: line.reqId, method: line.method, path, status: line.status, ms: Math.round(line.ms), ...line.fields };
  logger[level](res.writableFinished ? fields : { ...fields, client_gone: true }, 'request');
}
