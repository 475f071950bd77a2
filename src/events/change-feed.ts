/**
 * The change feed: how an admin change made through one gateway process reaches every other process
 * sharing its database (CONTRACT §8: within 1 s). A writer publishes a change after its write is
 * committed; every process's caches drop what the change names. Implementations sit beside this file:
 * in process (one node) and Redis pub/sub (many).
 */

/** What changed: a key (by hash), an account (by id), or an account's BYOK provider keys. */
export type Change = { kind: 'key'; hash: string } | { kind: 'account'; id: string } | { kind: 'byok'; accountId: string };

/**
 * What a listener is told: a change, or `reset` when changes may have been missed (the feed's
 * connection dropped and came back): a listener then drops everything it cached.
 */
export type FeedEvent = Change | { kind: 'reset' };

export type FeedListener = (event: FeedEvent) => void;

export interface ChangeFeed {
  /**
   * Tells every process, this one included, that `change` happened. This process's listeners hear it
   * before the promise settles (synchronously, in the call itself). Never rejects: a change that could
   * not be sent to other processes is reported by the implementation, and their caches' own lifetimes
   * bound how long they miss it.
   */
  publish(change: Change): Promise<void>;
  /** Adds a listener; answers a function that removes it. Listeners must not throw. */
  subscribe(listener: FeedListener): () => void;
  /**
   * Whether changes made by other processes are known to reach this one right now. While it is false,
   * caches keep what they read for at most their short fallback lifetime.
   */
  readonly live: boolean;
  /** Stops listening. The connections (if any) belong to the caller, which closes them. */
  close(): Promise<void>;
}
