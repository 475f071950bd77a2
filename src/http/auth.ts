import type { FastifyRequest } from 'fastify';
import type { Clock } from '../clock.js';
import { GatewayError } from '../errors.js';
import type { KeyRecord, Keys } from '../ledger/ledger.js';
import { hashApiKey, secretsEqual } from '../security/api-key.js';

function bearer(req: FastifyRequest): string | undefined {
  const header = req.headers.authorization;
  if (!header) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(header.trim());
  return m?.[1]?.trim();
}

const unauthorized = (message: string) => new GatewayError('unauthorized', message);

/** The API key the request carries, if it is valid: known, enabled and not expired (else 401). */
export async function authenticateKey(req: FastifyRequest, ledger: Keys, clock: Clock): Promise<KeyRecord> {
  const presented = bearer(req);
  if (!presented) throw unauthorized('missing API key: send it as "Authorization: Bearer <API_KEY>"');
  const key = await ledger.findKey(hashApiKey(presented));
  if (!key) throw unauthorized('invalid API key');
  if (key.disabled) throw unauthorized('this API key is disabled');
  if (key.expiresAt !== null && key.expiresAt <= clock.now()) {
    throw unauthorized(`this API key expired at ${new Date(key.expiresAt).toISOString()}`);
  }
  return key;
}

/** Admin routes take only the admin token; an API key is never an admin credential. */
export function requireAdmin(req: FastifyRequest, adminToken: string): void {
  const presented = bearer(req);
  if (!presented || !secretsEqual(presented, adminToken)) {
    throw new GatewayError('admin_unauthorized', 'admin routes need "Authorization: Bearer <admin_token>"');
  }
}
