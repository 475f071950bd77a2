import type { Nano } from '../ledger/money.js';

/**
 * Spending holds, grouped in scopes (an account's in-flight budget, an account's or a key's running
 * requests). A hold counts toward its scope until its `until` time: a running hold until the end of
 * its lease, which its request's process renews while the request runs (so a dead process's holds
 * lapse within one lease), a settling one until its settlement window ends.
 * Implementations sit beside this file (in process, Redis); core code imports only this one.
 */
export interface HoldView {
  amount: Nano;
  /** When the hold stops counting (ms). */
  until: number;
  /** True once the request ended and the hold is its actual cost, waiting out the settlement window. */
  settling: boolean;
}

export type AcquireResult = { ok: true; held: Nano } | { ok: false; held: Nano; holds: HoldView[] };

export interface HoldStore {
  /**
   * Atomically: when the scope's active holds plus `amount` stay within `limit` (or there is no
   * limit), adds the hold and answers ok; otherwise adds nothing and answers what is held.
   */
  acquire(scope: string, id: string, amount: Nano, limit: Nano | null, now: number, until: number): Promise<AcquireResult>;
  /** Replaces a hold's amount with the actual cost and keeps it until `until` (the settlement window). */
  settle(scope: string, id: string, amount: Nano, until: number): Promise<void>;
  /**
   * Extends a running hold's lease to `until`; answers false (and changes nothing) when the hold is
   * not running at `now`: settling, released, or lapsed.
   */
  renew(scope: string, id: string, now: number, until: number): Promise<boolean>;
  /** Drops a hold at once. */
  release(scope: string, id: string): Promise<void>;
  /** The sum of the scope's active holds at `now`. */
  held(scope: string, now: number): Promise<Nano>;
  /** The scope's active holds at `now`. */
  list(scope: string, now: number): Promise<HoldView[]>;
  close(): Promise<void>;
}
