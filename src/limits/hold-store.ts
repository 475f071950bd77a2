import type { Awaitable } from '../awaitable.js';
import type { LedgerUpdate } from '../ledger/ledger.js';
import type { Nano } from '../ledger/money.js';

export type { AccountSnapshot, LedgerUpdate, PeriodUsage } from '../ledger/ledger.js';

/**
 * The money view every gateway process admits against, and the holds of the requests running now.
 *
 * The SQL ledger is the authority for money; this store keeps, per account:
 * - snapshots of what the ledger holds: the account's balance and total usage, and a key's usage per
 *   period, each stamped with the account's commit sequence number (`seq`, moved by every ledger
 *   transaction that changes the account). A snapshot is only ever replaced by one with a higher
 *   `seq`, so a late writer never puts back an older view;
 * - pending charges: the actual cost of requests that ended, until the ledger commit that records
 *   them replaces the snapshot (`committed`, one atomic step: the snapshot moves and the pending
 *   charge goes, so no reader ever sees a charge neither pending nor in the snapshot);
 * - holds, in scopes: running requests' estimates against the balance, the key's limit and the
 *   in-flight budget; and the actual cost of ended requests in the budget for the settlement window.
 *
 * Admission takes all of a request's holds in one atomic step against that view: balance = snapshot −
 * pending charges. Running holds and pending charges carry a lease that their process renews; one
 * that lapses (its process died) stops counting, and a lapsed pending charge drops the account's
 * snapshots too (the charge may be in the ledger by now, or never be: the next admission reloads).
 * Time comes from the store's own clock (Redis's TIME, or the injected clock in process): callers
 * pass durations, never instants.
 *
 * Implementations sit beside this file (in process, Redis); core code imports only this one.
 */

/** The periods a charge counts in, as `periodKeys` names them. */
export interface ChargePeriods {
  daily: string;
  weekly: string;
  monthly: string;
}

export interface AdmitRequest {
  accountId: string;
  /** The request (generation) id; every hold of the request is under it. */
  id: string;
  /** How long running holds count without renewal. */
  leaseMs: number;
  /** Refuse when the account's balance is negative (prepaid accounts, free models too). */
  refuseNegative: boolean;
  /** A hold against the key's spending limit in `period` (`all` when it never resets). */
  key?: { hash: string; period: string; includeByok: boolean; limit: Nano; amount: Nano };
  /** A hold against the balance (prepaid accounts). */
  balance?: Nano;
  /**
   * A hold against the in-flight budget, when the account is subject to it by every rule but the
   * balance's: below `threshold` the budget is min(balance × fractionPpm / 10⁶, ceiling).
   */
  budget?: { amount: Nano; threshold: Nano; fractionPpm: bigint; ceiling: Nano };
}

export interface HoldView {
  amount: Nano;
  /** When the hold stops counting (ms, store clock). */
  until: number;
  /** True once the request ended and the hold is its actual cost, waiting out the settlement window. */
  settling: boolean;
}

export type AdmitResult =
  | { ok: true; now: number; balance: Nano }
  /** The store has no snapshot of the account (or of the key's period): load one and try again. */
  | { ok: false; refused: 'snapshot'; account: boolean; key: boolean }
  | { ok: false; refused: 'negative'; balance: Nano }
  /** `used`: the key's usage in the period (charged and pending); `held`: its other running holds. */
  | { ok: false; refused: 'key'; used: Nano; held: Nano }
  /** `held`: the other running holds on the balance. */
  | { ok: false; refused: 'balance'; balance: Nano; held: Nano }
  | { ok: false; refused: 'weight'; budget: Nano }
  /** `holds`: every hold counting in the budget, in no particular order (Redis and memory list them differently). */
  | { ok: false; refused: 'budget'; budget: Nano; held: Nano; holds: HoldView[]; now: number };

export type Refusal = Exclude<AdmitResult, { ok: true }>;

export interface SettleRequest {
  accountId: string;
  id: string;
  /** Credits charged; 0 releases the request's holds and records nothing. */
  cost: Nano;
  /** BYOK list-price usage (counts against a key limit that includes BYOK). */
  byokUsage: Nano;
  keyHash: string;
  periods: ChargePeriods;
  /** How long the actual cost stays in the in-flight budget. */
  windowMs: number;
  /** How long the pending charge counts without renewal (renewed until it is committed). */
  leaseMs: number;
}

/** An account's money as every process sees it (snapshot less pending charges), and its budget holds. */
export interface MoneyView {
  balance: Nano;
  totalUsage: Nano;
  /** The key's usage per period asked for (charged and pending), when every one is known. */
  keyUsage: Map<string, { usage: Nano; byokUsage: Nano }> | undefined;
  budgetHeld: Nano;
  /** What running requests hold against the balance. */
  runningHeld: Nano;
}

/**
 * Calls take effect in the order they are made: an admission or a view sees every settlement, renewal
 * and record made before it by this process, awaited or not. The writes nobody waits for may reach
 * other processes a few milliseconds later than they are made (see RedisHoldStore).
 */
export interface HoldStore {
  /**
   * One atomic step: refuses (naming the first limit in the contract's order: negative balance, key
   * limit, balance, in-flight budget) or takes every hold the request asks for. At once from a store
   * in this process (awaitable.ts).
   */
  admit(req: AdmitRequest): Awaitable<AdmitResult>;
  /**
   * The request ended: its budget hold becomes its actual cost for the settlement window, and its
   * running holds on the balance and key become a pending charge of that cost. At once from a store
   * in this process (awaitable.ts).
   */
  settle(req: SettleRequest): Awaitable<void>;
  /** Extends the lease of the request's running holds and pending charge. */
  renew(accountId: string, id: string, leaseMs: number): Promise<void>;
  /** Puts what the ledger says into the snapshots (when newer) and drops the pending charges it recorded. */
  record(update: LedgerUpdate): Promise<void>;
  /** The account's money view; undefined when there is no snapshot of the account (load one). */
  view(accountId: string, key?: { hash: string; periods: readonly string[] }): Promise<MoneyView | undefined>;
  close(): Promise<void>;
}
