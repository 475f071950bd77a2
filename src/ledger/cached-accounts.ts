import type { ChangeFeed } from '../events/change-feed.js';
import type { Awaitable } from '../awaitable.js';
import { FeedCache } from '../events/feed-cache.js';
import type { Account, Accounts, CreditKind, NewAccount } from './ledger.js';
import type { Nano } from './money.js';

export interface CachedAccountsOptions {
  /** Milliseconds on a clock that does not go back (the gateway's clock). */
  now: () => number;
  /** Accounts kept at most (default 10,000); past it the least recently used goes. */
  maxEntries?: number;
  /** How long an account is reused, live feed or not (default and at most 1 s). */
  ttlMs?: number;
}

/**
 * Accounts with `getAccount` cached, for the account's own fields (name, type, exemptions) and its
 * totals as views show them (/credits, /key, the admin API). An admin change to an account (credits
 * added, an account created or changed) through any process reaches this one through the change feed
 * and drops the cached copy.
 *
 * `balance` and `totalUsage` also move with every charge of every process: the cached figures lag
 * them. They are never used for money: admission and the views take the balance from the hold
 * store (AccountMoney), which every process shares.
 */
export class CachedAccounts implements Accounts {
  private readonly cache: FeedCache<Account | undefined>;

  constructor(
    private readonly inner: Accounts,
    private readonly feed: ChangeFeed,
    options: CachedAccountsOptions,
  ) {
    const ttlMs = Math.min(options.ttlMs ?? 1_000, 1_000);
    this.cache = new FeedCache(feed, {
      idOf: (c) => (c.kind === 'account' ? c.id : undefined),
      now: options.now,
      maxEntries: options.maxEntries ?? 10_000,
      liveTtlMs: ttlMs,
      fallbackTtlMs: ttlMs,
    });
  }

  getAccount(id: string): Awaitable<Account | undefined> {
    // The cached account is shared by every caller: its fields are read-only by their type, and it is
    // not frozen, for one map (as cached-keys.ts says).
    return this.cache.get(id, () => this.inner.getAccount(id));
  }

  async createAccount(input: NewAccount): Promise<Account> {
    const account = await this.inner.createAccount(input);
    // Another process may have cached the id as unknown (ids are random: only if it was guessed).
    await this.feed.publish({ kind: 'account', id: account.id });
    return account;
  }

  async addCredits(accountId: string, amount: Nano, kind: CreditKind, at: number): Promise<Account | undefined> {
    try {
      return await this.inner.addCredits(accountId, amount, kind, at);
    } finally {
      // Published whatever the outcome: a write that failed may still have landed.
      await this.feed.publish({ kind: 'account', id: accountId });
    }
  }

  /** Never cached: money is read fresh, and kept by the hold store. */
  moneySnapshot(accountId: string, key?: { hash: string; periods: readonly string[] }): ReturnType<Accounts['moneySnapshot']> {
    return this.inner.moneySnapshot(accountId, key);
  }

  /** Stops listening to the feed. */
  close(): void {
    this.cache.close();
  }
}
