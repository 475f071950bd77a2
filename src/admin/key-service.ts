import type { Clock } from '../clock.js';
import { invalidRequest } from '../errors.js';
import type { KeyPatch, KeyRecord, Keys, NewKey } from '../ledger/ledger.js';
import { generateApiKey, hashApiKey, labelOf } from '../security/api-key.js';
import { amountOf, parseInput } from './parse-input.js';
import { adminNewKeySchema, keyPatchSchema, ownerNewKeySchema, rotationSchema } from './request-schemas.js';

/** Who asks for a new key: the operator (admin API, CLI) or the account's management key. */
export type KeyIssuer = 'operator' | 'owner';

/** A key with its secret: the one answer that ever shows the secret. */
export interface IssuedKey {
  key: string;
  record: KeyRecord;
}

/** A validated request for a new key, waiting for its account. */
export type NewKeyInput = Omit<NewKey, 'hash' | 'secretHash' | 'accountId' | 'label' | 'createdAt'>;

/**
 * Keys through their life, shared by the admin API, the management API and the CLI: input checked
 * the same way for all (a 400 naming the field), then created, changed, rotated or deleted. Which
 * keys a caller may touch is the caller's to check.
 */
export class KeyService {
  constructor(
    private readonly keys: Keys,
    private readonly clock: Clock,
  ) {}

  parseNew(body: unknown, issuer: KeyIssuer): NewKeyInput {
    const input = issuer === 'operator' ? parseInput(adminNewKeySchema, body) : parseInput(ownerNewKeySchema, body);
    return {
      name: input.name ?? 'default',
      limit: input.limit === undefined || input.limit === null ? null : amountOf('limit', input.limit, false),
      limitReset: input.limit_reset ?? null,
      includeByokInLimit: input.include_byok_in_limit ?? false,
      expiresAt: this.expiry(input.expires_at) ?? null,
      management: 'management' in input ? (input.management ?? false) : false,
    };
  }

  /** A new key for `accountId` (which the caller has found). */
  async create(accountId: string, input: NewKeyInput): Promise<IssuedKey> {
    const key = generateApiKey();
    const hash = hashApiKey(key);
    const record = await this.keys.createKey({ ...input, hash, secretHash: hash, accountId, label: labelOf(key), createdAt: this.clock.now() });
    return { key, record };
  }

  parsePatch(body: unknown): KeyPatch {
    const input = parseInput(keyPatchSchema, body);
    const patch: KeyPatch = {};
    if (input.name !== undefined) patch.name = input.name;
    if (input.limit !== undefined) patch.limit = input.limit === null ? null : amountOf('limit', input.limit, false);
    if (input.limit_reset !== undefined) patch.limitReset = input.limit_reset;
    if (input.include_byok_in_limit !== undefined) patch.includeByokInLimit = input.include_byok_in_limit;
    if (input.disabled !== undefined) patch.disabled = input.disabled;
    const expiresAt = this.expiry(input.expires_at);
    if (expiresAt !== undefined) patch.expiresAt = expiresAt;
    return patch;
  }

  update(hash: string, patch: KeyPatch): Promise<KeyRecord | undefined> {
    return this.keys.updateKey(hash, patch, this.clock.now());
  }

  /** The grace period a rotation asks for, in seconds (0 when it names none). */
  parseRotation(body: unknown): number {
    return parseInput(rotationSchema, body).grace_seconds ?? 0;
  }

  /**
   * A new secret for the key: same public hash, usage and limits; its earlier secrets keep working
   * `graceSeconds` more (0: they stop at once). Undefined when there is no such key.
   */
  async rotate(hash: string, graceSeconds: number): Promise<IssuedKey | undefined> {
    const key = generateApiKey();
    const at = this.clock.now();
    const record = await this.keys.rotateKey(hash, { secretHash: hashApiKey(key), label: labelOf(key), at, graceUntil: at + graceSeconds * 1000 });
    return record && { key, record };
  }

  delete(hash: string): Promise<boolean> {
    return this.keys.deleteKey(hash, this.clock.now());
  }

  /** An expiry from input: undefined when absent, null to clear it, else a time that must be ahead. */
  private expiry(value: string | null | undefined): number | null | undefined {
    if (value === undefined || value === null) return value;
    const at = Date.parse(value);
    if (at <= this.clock.now()) throw invalidRequest('expires_at: must be in the future', { field: 'expires_at' });
    return at;
  }
}
