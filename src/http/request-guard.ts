import type { DdosGuard } from '../admission/ddos-guard.js';
import { mapAwaitable, type Awaitable } from '../awaitable.js';
import { GatewayError } from '../errors.js';

const shuttingDown = () =>
  new GatewayError('unavailable', 'the gateway is shutting down: send the request again, on a new connection', { headers: { 'retry-after': '1' } });

const nulInUrl = () => new GatewayError('invalid_request', 'the URL holds a NUL character (%00), which no path or query of this API takes');

/**
 * What every request meets before its route, Fastify's routes and the chat route alike, in this order:
 * while shutdown is under way (`closing`), a 503; then the DDoS guard, before a key is looked up or a
 * body is read; then a URL holding a NUL character, which can be in no id, name or search of the
 * gateway's (PostgreSQL refuses one in text, where SQLite would find nothing). Throws, or rejects,
 * with the refusal; at once when the guard answers at once.
 */
export function requestGuard(ddos: DdosGuard, closing: () => boolean): (ip: string, url: string) => Awaitable<void> {
  return (ip, url) => {
    if (closing()) throw shuttingDown();
    return mapAwaitable(ddos.check(ip), () => {
      if (url.includes('%00')) throw nulInUrl();
    });
  };
}
