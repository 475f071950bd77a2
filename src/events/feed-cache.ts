import type { Awaitable } from '../awaitable.js';
import type { Change, ChangeFeed } from './change-feed.js';

export interface FeedCacheOptions {
  /** The most entries kept; past it one not used lately goes (see FeedCache). */
  maxEntries: number;
  /** How long an entry is used while the feed is live: a safety net, as the feed drops changed entries. */
  liveTtlMs: number;
  /**
   * How long an entry is used while the feed is not live (changes from other processes may be missed):
   * the bound on how late such a change shows here. Entries older than this are not used from the
   * moment the feed stops being live, whenever they were read.
   */
  fallbackTtlMs: number;
  /** Milliseconds on any clock that does not go back. */
  now: () => number;
  /** The id a change makes stale in this cache, if any (a `reset` empties it). */
  idOf: (change: Change) => string | undefined;
}

interface Entry<V> {
  at: number;
  value: V;
  /** Hit since it was stored, or since eviction last passed it over. */
  used: boolean;
}

interface Load<V> {
  promise: Promise<V>;
  /** `stale` is set when the entry was invalidated while the read ran: its answer may predate the change. */
  state: { stale: boolean };
}

/**
 * A bounded cache of reads (by count, and by age) that the change feed keeps fresh: it drops the
 * entry each change names (`idOf`) and everything on `reset`, until `close()`.
 *
 * Past `maxEntries`, an entry not used lately goes, chosen as CLOCK chooses (an approximation of least
 * recently used): a hit only marks its entry used; when one must go, the oldest entry goes unless it
 * was used since it was last passed over, in which case it moves to the newest end, unmarked, and the
 * next oldest is looked at. A hit changes nothing in the map: moving the entry to the newest end at
 * every hit (delete, then set) made V8 shrink and regrow the map's table a request (~2 % of the
 * gateway's CPU, `perf`, bench/README.md, tenth session).
 *
 * Invariant: an entry is never fresher than what the database held when its read started. A read is
 * aged from its start, and a read that an invalidation (or a reset) overtook is answered to the
 * callers that were waiting for it but not kept: it may have seen the row before the change. Reads of
 * one id at one time share a single query; a caller arriving after an invalidation starts a new one.
 */
export class FeedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly loading = new Map<string, Load<V>>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly feed: Pick<ChangeFeed, 'live' | 'subscribe'>,
    private readonly options: FeedCacheOptions,
  ) {
    this.unsubscribe = feed.subscribe((event) => {
      if (event.kind === 'reset') return this.clear();
      const id = options.idOf(event);
      if (id !== undefined) this.invalidate(id);
    });
  }

  /** Stops listening to the feed. */
  close(): void {
    this.unsubscribe();
  }

  /**
   * The cached value of `id` while fresh, at once (no promise: awaitable.ts); else a promise of
   * `load()`'s, kept unless `id` changes while it runs.
   */
  get(id: string, load: () => Awaitable<V>): Awaitable<V> {
    const now = this.options.now();
    const hit = this.entries.get(id);
    if (hit) {
      const age = now - hit.at;
      if (age >= 0 && age < this.ttl()) {
        hit.used = true;
        return hit.value;
      }
      this.entries.delete(id);
    }
    const running = this.loading.get(id);
    if (running) return running.promise;
    const state = { stale: false };
    const done = () => {
      if (this.loading.get(id)?.state === state) this.loading.delete(id);
    };
    // The read starts now (it is aged from now), whether `load` answers at once, later or throws.
    let loaded: Awaitable<V>;
    try {
      loaded = load();
    } catch (err) {
      loaded = Promise.reject(err as Error);
    }
    const promise = Promise.resolve(loaded).then(
      (value) => {
        done();
        if (!state.stale) this.store(id, now, value);
        return value;
      },
      (err: unknown) => {
        done();
        throw err;
      },
    );
    this.loading.set(id, { promise, state });
    return promise;
  }

  /** `id` changed: its entry goes, and a read of it already running is not kept. */
  invalidate(id: string): void {
    this.entries.delete(id);
    const running = this.loading.get(id);
    if (running) {
      running.state.stale = true;
      this.loading.delete(id);
    }
  }

  /** Anything may have changed: every entry goes, and no read already running is kept. */
  clear(): void {
    this.entries.clear();
    for (const running of this.loading.values()) running.state.stale = true;
    this.loading.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private ttl(): number {
    return this.feed.live ? this.options.liveTtlMs : this.options.fallbackTtlMs;
  }

  private store(id: string, at: number, value: V): void {
    this.entries.delete(id);
    this.entries.set(id, { at, value, used: false });
    // Each turn drops the oldest entry or unmarks it: within two rounds of the map one is dropped.
    while (this.entries.size > this.options.maxEntries) {
      const oldest = this.entries.entries().next();
      if (oldest.done) break;
      const [oldestId, entry] = oldest.value;
      this.entries.delete(oldestId);
      // A second chance, at the newest end: one used since it was last passed over, and the entry
      // just stored (when every other was used lately, it comes round before one of them goes).
      if (entry.used || oldestId === id) {
        entry.used = false;
        this.entries.set(oldestId, entry);
      }
    }
  }
}
