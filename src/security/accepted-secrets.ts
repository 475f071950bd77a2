const KEPT = 10_000;

/**
 * The hashes of the API key secrets accepted lately, by secret. A key is looked up by the SHA-256 of the
 * secret a request presents, and hashing it through node:crypto costs ~8,300 instructions a request
 * (OpenSSL's set-up for a 73-byte input; instructions.mjs, eighteenth session), against ~700 for this
 * map's lookup. The memo is of a pure function (a secret's hash never changes), so it needs no
 * invalidation: whether the key is still enabled, rotated or deleted is decided afterwards, by the key
 * found for the hash, as before. Only secrets that were accepted are kept (a stream of made-up keys
 * fills nothing), at most KEPT of them, dropped whole past that; they are held in this process's memory
 * only, as every request's secret already is while it runs, and never written anywhere.
 */
const hashes = new Map<string, string>();

/** The SHA-256 (hex) of `secret` when it was accepted lately, else undefined. */
export function rememberedSecretHash(secret: string): string | undefined {
  return hashes.get(secret);
}

/** `secret` (with its hash) was accepted: later requests with it skip the hashing. */
export function acceptedSecret(secret: string, hash: string): void {
  if (hashes.has(secret)) return;
  if (hashes.size >= KEPT) hashes.clear();
  hashes.set(secret, hash);
}

/** How many secrets are held (for tests: the memo stays bounded and keeps only accepted secrets). */
export const acceptedSecretsHeld = (): number => hashes.size;

export const ACCEPTED_SECRETS_KEPT = KEPT;
