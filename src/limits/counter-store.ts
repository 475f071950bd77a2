/**
 * Request counters in fixed windows (a minute, a UTC day), for the rate limits. Implementations sit
 * beside this file (in process, Redis); core code imports only this one.
 */
export interface Counter {
  /** The counter's key, window included (e.g. `free:min:acct_1:model:29544000`). */
  key: string;
  limit: number;
  /** When the window ends and the counter is dropped (ms). */
  resetAt: number;
}

export type HitResult = { ok: true; counts: number[] } | { ok: false; failed: number; count: number };

export interface CounterStore {
  /**
   * Atomically: when every counter is below its limit, adds one to each and answers their new
   * counts; otherwise adds nothing and names the first counter at its limit.
   */
  hit(counters: readonly Counter[], now: number): Promise<HitResult>;
  /**
   * Adds `n` to each counter whatever its limit, and answers their new counts: for a limit that is
   * counted in batches and is approximate across processes by design (the DDoS guard). The counters of
   * one call must share a Redis Cluster slot (a hash tag in their keys).
   */
  add(counters: ReadonlyArray<{ key: string; n: number; resetAt: number }>, now: number): Promise<number[]>;
  /** What each counter holds now (0 for none), without counting. */
  peek(keys: readonly string[], now: number): Promise<number[]>;
  close(): Promise<void>;
}
