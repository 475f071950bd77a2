import type { IncomingHttpHeaders } from 'node:http';
import { mapAwaitable, type Awaitable } from '../awaitable.js';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { KeyRecord, Keys } from '../ledger/ledger.js';
import { hashApiKey, secretsEqual } from '../security/api-key.js';
import { acceptedSecret, rememberedSecretHash } from '../security/accepted-secrets.js';

/** A request as authentication reads it: its headers (Fastify's request, or node:http's). */
type HeldHeaders = { readonly headers: IncomingHttpHeaders };

/**
 * The token of an `Authorization: Bearer <token>` header: "Bearer" in any case, blanks, the token
 * (what /^Bearer\s+(.+)$/i matches in the trimmed header, taken apart by hand on every request).
 */
function bearer(req: HeldHeaders): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const h = header.trim();
  if (h.slice(0, 6).toLowerCase() !== 'bearer') return undefined;
  const rest = h.slice(6);
  const token = rest.trimStart();
  // No blank after "Bearer" (the header is trimmed, so only leading blanks can go), or nothing after them.
  return token.length === rest.length || token === '' ? undefined : token;
}

const unauthorized = (message: string) => new GatewayError('unauthorized', message);

/**
 * What a route lets a key do: inference takes inference keys only, management (the /keys routes,
 * CONTRACT §9) management keys only, and the account's read routes (/key, /credits, /generation) either.
 */
export type KeyUse = 'inference' | 'management' | 'either';

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * The API key the request carries, if it is valid: a secret of a key (its current one, or a rotated
 * one still in its grace period), enabled, not expired, and fit for `use` (else 401). At once when the
 * key is cached, and then a bad key throws at once too (awaitable.ts).
 */
export function authenticateKey(req: HeldHeaders, ledger: Pick<Keys, 'findKey' | 'keyHashOfSecret'>, clock: Clock, use: KeyUse): Awaitable<KeyRecord> {
  const presented = bearer(req);
  if (!presented) throw unauthorized('missing API key: send it as "Authorization: Bearer <API_KEY>"');
  // A secret accepted lately is looked up once (a lookup hashes the new string the header was cut into).
  const remembered = rememberedSecretHash(presented);
  const secretHash = remembered ?? hashApiKey(presented);
  return mapAwaitable(ledger.keyHashOfSecret(secretHash), (hash) =>
    hash === undefined
      ? checkedKey(undefined, secretHash, clock, use)
      : mapAwaitable(ledger.findKey(hash), (key) => {
          const accepted = checkedKey(key, secretHash, clock, use);
          if (remembered === undefined) acceptedSecret(presented, secretHash);
          return accepted;
        }),
  );
}

/** `key` if `secretHash` is one of its secrets and the key may be used so now, else 401. */
function checkedKey(key: KeyRecord | undefined, secretHash: string, clock: Clock, use: KeyUse): KeyRecord {
  const secret = key?.secrets.find((s) => s.secretHash === secretHash);
  if (!key || !secret) throw unauthorized('invalid API key');
  const now = clock.now();
  if (secret.validUntil !== null && secret.validUntil <= now) {
    throw unauthorized(`this API key was rotated: this secret stopped working at ${iso(secret.validUntil)}; use the new one`);
  }
  if (key.disabled) throw unauthorized('this API key is disabled');
  if (key.expiresAt !== null && key.expiresAt <= now) throw unauthorized(`this API key expired at ${iso(key.expiresAt)}`);
  if (use === 'inference' && key.management) {
    throw unauthorized("this is a management key: it manages the account's API keys (/api/v1/keys) and cannot be used for inference");
  }
  if (use === 'management' && !key.management) {
    throw unauthorized('this route needs a management key (the operator creates one with "management": true); an inference API key cannot manage keys');
  }
  return key;
}

/** Admin routes take only the admin token; an API key is never an admin credential. */
export function requireAdmin(req: HeldHeaders, adminToken: string): void {
  requireToken(req, [adminToken], 'admin routes need "Authorization: Bearer <admin_token>"');
}

/** A route that takes one of a few operator tokens (the admin token, `metrics.token`): anything else is 401 with `message`. */
export function requireToken(req: HeldHeaders, tokens: readonly string[], message: string): void {
  const presented = bearer(req);
  if (!presented || !tokens.some((t) => secretsEqual(presented, t))) throw new GatewayError('admin_unauthorized', message);
}
