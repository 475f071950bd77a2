import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'sk-tg-v1-';

/** A new API key; it is shown once and stored only as its hash. */
export function generateApiKey(): string {
  return API_KEY_PREFIX + randomBytes(32).toString('hex');
}

export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/** The gateway's own secrets as it makes them (API keys; a generated admin token), whole or cut short. */
const OWN_SECRET = /(?:sk-tg-v1-|tg-admin-)[0-9a-f]+/g;

/**
 * `text` without any secret of the gateway's own in it: text an upstream wrote may echo what a client
 * put in its request, its API key included.
 */
export function withoutOwnSecrets(text: string): string {
  return text.includes('sk-tg-') || text.includes('tg-admin-') ? text.replace(OWN_SECRET, '[redacted]') : text;
}

/** The masked form shown in listings, e.g. "sk-tg-v1-3f2...a91". */
export function labelOf(key: string): string {
  return `${key.slice(0, API_KEY_PREFIX.length + 3)}...${key.slice(-3)}`;
}

export function generateAdminToken(): string {
  return `tg-admin-${randomBytes(24).toString('hex')}`;
}

/** Constant-time comparison of a presented secret with the expected one. */
export function secretsEqual(presented: string, expected: string): boolean {
  const a = hash('sha256', presented, 'buffer');
  const b = hash('sha256', expected, 'buffer');
  return timingSafeEqual(a, b);
}
