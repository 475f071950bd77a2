import { randomBytes } from 'node:crypto';

/**
 * Request ids (X-Request-Id), shaped as a UUID: `req-` and 80 random bits drawn once a process (so two
 * processes never share a prefix), then a counter of the process's requests. crypto.randomUUID() a
 * request cost ~1,800 instructions (its 16 bytes formatted one by one); an id needs to be unique,
 * not unguessable: it names a request in the logs, never authorises anything.
 */
export class RequestIds {
  private readonly prefix: string;
  private count = 0;

  constructor() {
    const hex = randomBytes(10).toString('hex');
    this.prefix = `req-${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
  }

  next(): string {
    this.count++;
    // 12 hex digits: the count would wrap past 2^48 requests (nine years at a million a second).
    if (this.count > 0xffffffffffff) this.count = 1;
    return this.prefix + this.count.toString(16).padStart(12, '0');
  }
}

/** A request id a client may send (`X-Request-Id`) and have kept: short, and plain characters only. */
const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The request's id: the client's own when it sent a well-formed one, else a new one of `ids`. */
export function requestIdOf(sent: string | string[] | undefined, ids: RequestIds): string {
  return typeof sent === 'string' && CLIENT_REQUEST_ID.test(sent) ? sent : ids.next();
}
