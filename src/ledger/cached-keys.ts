import type { Change, ChangeFeed } from '../events/change-feed.js';
import type { Awaitable } from '../awaitable.js';
import { FeedCache } from '../events/feed-cache.js';
import type { KeyListing, KeyPatch, KeyRecord, KeyRotation, KeyUsage, Keys, NewKey } from './ledger.js';

export interface CachedKeysOptions {
  /** Milliseconds on a clock that does not go back (the gateway's clock). */
  now: () => number;
  /** Keys kept at most (default 10,000); past it the least recently used goes. */
  maxEntries?: number;
  /** How long a key is reused while the change feed is live (default 5 s): a safety net only. */
  liveTtlMs?: number;
  /** How long a key is reused while the feed is not live (default 1 s): CONTRACT §8's bound. */
  fallbackTtlMs?: number;
}

/**
 * Keys with `findKey` and `keyHashOfSecret` cached: both are read on every request. A change to a key
 * made through any process reaches this one through the change feed and drops the cached copy; unknown
 * hashes are cached too (so `createKey` and `rotateKey` publish the new secret's hash as well). A
 * secret's key never changes once issued, so whether a secret still authenticates (rotated, its key
 * deleted) is read from the key itself, which the key's change drops. While the feed is not live
 * (changes from other processes may be missed), nothing cached is used past `fallbackTtlMs`. A read
 * that a change overtook is used by its callers but not kept (see FeedCache).
 *
 * Every write goes to the database first and is published after it, whatever its outcome: a write
 * that failed may still have landed.
 */
export class CachedKeys implements Keys {
  private readonly keys: FeedCache<KeyRecord | undefined>;
  private readonly secrets: FeedCache<string | undefined>;

  constructor(
    private readonly inner: Keys,
    private readonly feed: ChangeFeed,
    options: CachedKeysOptions,
  ) {
    const cacheOptions = {
      idOf: (c: Change) => (c.kind === 'key' ? c.hash : undefined),
      now: options.now,
      maxEntries: options.maxEntries ?? 10_000,
      liveTtlMs: options.liveTtlMs ?? 5_000,
      fallbackTtlMs: options.fallbackTtlMs ?? 1_000,
    };
    this.keys = new FeedCache(feed, cacheOptions);
    this.secrets = new FeedCache(feed, cacheOptions);
  }

  findKey(hash: string): Awaitable<KeyRecord | undefined> {
    // The cached record is shared by every caller, where a copy a request cost a clone of it: its
    // fields are read-only by their type. Not frozen: V8 gave frozen copies of a key a map of their own
    // nearly every time, so each key read again (every second on SQLite) deoptimised the functions of
    // the request's path that read it, and V8 compiled them again (bench/README.md, thirty-sixth session).
    return this.keys.get(hash, () => this.inner.findKey(hash));
  }

  keyHashOfSecret(secretHash: string): Awaitable<string | undefined> {
    return this.secrets.get(secretHash, () => this.inner.keyHashOfSecret(secretHash));
  }

  createKey(key: NewKey): Promise<KeyRecord> {
    return this.changing([key.hash, key.secretHash ?? key.hash], () => this.inner.createKey(key));
  }

  updateKey(hash: string, patch: KeyPatch, at: number): Promise<KeyRecord | undefined> {
    return this.changing([hash], () => this.inner.updateKey(hash, patch, at));
  }

  rotateKey(hash: string, rotation: KeyRotation): Promise<KeyRecord | undefined> {
    return this.changing([hash, rotation.secretHash], () => this.inner.rotateKey(hash, rotation));
  }

  deleteKey(hash: string, at: number): Promise<boolean> {
    return this.changing([hash], () => this.inner.deleteKey(hash, at));
  }

  listKeys(accountId: string, listing?: KeyListing): Promise<KeyRecord[]> {
    return this.inner.listKeys(accountId, listing);
  }

  keyUsage(hash: string, at: number): Promise<KeyUsage> {
    return this.inner.keyUsage(hash, at);
  }

  /** Stops listening to the feed. */
  close(): void {
    this.keys.close();
    this.secrets.close();
  }

  private async changing<T>(hashes: string[], write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      for (const hash of new Set(hashes)) await this.feed.publish({ kind: 'key', hash });
    }
  }
}
