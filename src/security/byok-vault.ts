import type { ChangeFeed } from '../events/change-feed.js';
import type { Awaitable } from '../awaitable.js';
import { FeedCache } from '../events/feed-cache.js';
import type { ByokSecrets } from '../ledger/ledger.js';
import type { SecretBox } from './secret-box.js';

export interface ByokVaultOptions {
  /** Milliseconds on a clock that does not go back (the gateway's clock); also stamps stored keys. */
  now: () => number;
  /** Accounts whose opened keys are kept at most (default 10,000). */
  maxEntries?: number;
  /** How long opened keys are reused while the change feed is live (default 5 s): a safety net only. */
  liveTtlMs?: number;
  /** How long they are reused while the feed is not live (default 1 s): CONTRACT §8's bound. */
  fallbackTtlMs?: number;
}

/**
 * The accounts' own provider keys (BYOK), sealed at rest and opened only to call a provider. Opened
 * keys are cached per account; a key put or removed through any process is published on the change
 * feed, which drops the account's entry on every process (see FeedCache for the rules).
 */
export class ByokVault {
  private readonly cache: FeedCache<ReadonlyMap<string, string>>;

  constructor(
    private readonly secrets: ByokSecrets,
    private readonly box: SecretBox,
    private readonly feed: ChangeFeed,
    private readonly options: ByokVaultOptions,
  ) {
    this.cache = new FeedCache(feed, {
      idOf: (c) => (c.kind === 'byok' ? c.accountId : undefined),
      now: options.now,
      maxEntries: options.maxEntries ?? 10_000,
      liveTtlMs: options.liveTtlMs ?? 5_000,
      fallbackTtlMs: options.fallbackTtlMs ?? 1_000,
    });
  }

  /** The account's opened keys by provider: at once when cached (awaitable.ts). */
  keysFor(accountId: string): Awaitable<ReadonlyMap<string, string>> {
    return this.cache.get(accountId, async () => {
      const sealed = await this.secrets.byokSecrets(accountId);
      const keys = new Map<string, string>();
      for (const [provider, ciphertext] of sealed) keys.set(provider, this.box.open(ciphertext));
      return keys;
    });
  }

  /** The providers the account has a key stored for (the keys themselves are not opened). */
  async providers(accountId: string): Promise<string[]> {
    return [...(await this.secrets.byokSecrets(accountId)).keys()].sort();
  }

  async put(accountId: string, provider: string, apiKey: string): Promise<void> {
    const sealed = this.box.seal(apiKey);
    await this.changing(accountId, () => this.secrets.putByokSecret(accountId, provider, sealed, this.options.now()));
  }

  remove(accountId: string, provider: string): Promise<boolean> {
    return this.changing(accountId, () => this.secrets.deleteByokSecret(accountId, provider));
  }

  /** Stops listening to the feed. */
  close(): void {
    this.cache.close();
  }

  /** Writes, then publishes whatever the outcome (a write that failed may still have landed). */
  private async changing<T>(accountId: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      await this.feed.publish({ kind: 'byok', accountId });
    }
  }
}
