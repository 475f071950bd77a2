import type { FastifyRequest } from 'fastify';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { authenticateKey } from '../src/http/auth.js';
import type { KeyRecord } from '../src/ledger/ledger.js';
import { ACCEPTED_SECRETS_KEPT, acceptedSecret, acceptedSecretsHeld, rememberedSecretHash } from '../src/security/accepted-secrets.js';
import { hashApiKey } from '../src/security/api-key.js';

const clock = { now: () => 1_000 } as never;

/** A ledger holding one key whose only secret is `secret`; `looked` records each secret hash it was asked for. */
function ledgerWith(secret: string, patch: Partial<KeyRecord> = {}) {
  const hash = hashApiKey(secret);
  const key: KeyRecord = {
    hash,
    accountId: 'acct',
    name: 'k',
    label: 'sk-...',
    disabled: false,
    limit: null,
    limitReset: null,
    includeByokInLimit: false,
    expiresAt: null,
    createdAt: 0,
    updatedAt: null,
    management: false,
    secrets: [{ secretHash: hash, validUntil: null }],
    ...patch,
  };
  const looked: string[] = [];
  return {
    looked,
    ledger: {
      keyHashOfSecret: (secretHash: string) => {
        looked.push(secretHash);
        return secretHash === hash ? hash : undefined;
      },
      findKey: (h: string) => (h === hash ? key : undefined),
    },
  };
}

const request = (secret: string) => ({ headers: { authorization: `Bearer ${secret}` } }) as unknown as FastifyRequest;

describe('the memo of accepted secrets', () => {
  it('gives what SHA-256 gives, remembered or not', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.boolean(), (secret, remember) => {
        if (remember) acceptedSecret(secret, hashApiKey(secret));
        // What authentication takes: the remembered hash, else the secret hashed.
        expect(rememberedSecretHash(secret) ?? hashApiKey(secret)).toBe(hashApiKey(secret));
        if (remember) expect(rememberedSecretHash(secret)).toBe(hashApiKey(secret));
      }),
    );
  });

  it('remembers a secret only once a key accepted it; a made-up or refused one is not kept', () => {
    const { ledger, looked } = ledgerWith('sk-tg-v1-good');
    const before = acceptedSecretsHeld();
    expect(() => authenticateKey(request('sk-tg-v1-made-up'), ledger, clock, 'inference')).toThrow(/invalid API key/);
    expect(acceptedSecretsHeld()).toBe(before);
    expect(authenticateKey(request('sk-tg-v1-good'), ledger, clock, 'inference')).toMatchObject({ accountId: 'acct' });
    expect(acceptedSecretsHeld()).toBe(before + 1);
    expect(authenticateKey(request('sk-tg-v1-good'), ledger, clock, 'inference')).toMatchObject({ accountId: 'acct' });
    expect(acceptedSecretsHeld()).toBe(before + 1);
    expect(looked).toEqual([hashApiKey('sk-tg-v1-made-up'), hashApiKey('sk-tg-v1-good'), hashApiKey('sk-tg-v1-good')]);
    // A management key presented for inference is refused, and so not kept.
    const management = ledgerWith('sk-tg-v1-management', { management: true });
    expect(() => authenticateKey(request('sk-tg-v1-management'), management.ledger, clock, 'inference')).toThrow(/management key/);
    expect(acceptedSecretsHeld()).toBe(before + 1);
  });

  it('decides nothing: a remembered secret of a key disabled, expired or deleted since is refused', () => {
    const secret = 'sk-tg-v1-later-refused';
    expect(authenticateKey(request(secret), ledgerWith(secret).ledger, clock, 'inference')).toMatchObject({ accountId: 'acct' });
    expect(() => authenticateKey(request(secret), ledgerWith(secret, { disabled: true }).ledger, clock, 'inference')).toThrow(/disabled/);
    expect(() => authenticateKey(request(secret), ledgerWith(secret, { expiresAt: 500 }).ledger, clock, 'inference')).toThrow(/expired/);
    const deleted = { keyHashOfSecret: () => undefined, findKey: () => undefined };
    expect(() => authenticateKey(request(secret), deleted, clock, 'inference')).toThrow(/invalid API key/);
  });

  it('holds at most its bound, however many secrets are accepted', () => {
    for (let i = 0; i < ACCEPTED_SECRETS_KEPT + 10; i++) acceptedSecret(`sk-bound-${i}`, `h-${i}`);
    expect(acceptedSecretsHeld()).toBeLessThanOrEqual(ACCEPTED_SECRETS_KEPT);
    expect(acceptedSecretsHeld()).toBeGreaterThan(0);
  });
});
