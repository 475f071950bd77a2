import type { Clock, Timer } from '../clock.js';
import type { Nano } from '../ledger/money.js';
import { periodKeys } from '../ledger/periods.js';
import { isPromise, type Awaitable } from '../awaitable.js';
import type { HoldStore } from '../limits/hold-store.js';

export interface TicketOptions {
  /** The store that holds the request's holds; undefined when it took none. */
  holds: HoldStore | undefined;
  clock: Clock;
  accountId: string;
  id: string;
  keyHash: string;
  /** How long the holds count without renewal (`limits.hold_lease_ms`); renewed three times a lease. */
  leaseMs: number;
  /** How long the actual cost stays in the in-flight budget. */
  windowMs: number;
  /** Renewals of the running holds stop by then whatever happens (the request deadline, plus a window). */
  renewUntil: number;
  /** What the request holds against its balance and budget while it runs (its estimate; 0 when it took no hold). */
  held: Nano;
  /** Told how long the request ran (admitted to settled), once. */
  onEnded?: (durationMs: number) => void;
}

/** What a request ended up costing. */
export interface ActualCost {
  cost: Nano;
  byokUsage: Nano;
  /** When the request was charged, as the ledger counts it (chargedAt): its charge counts in that day's, week's and month's key usage. */
  chargedAt: number;
}

/**
 * The holds one admitted request took. While the request runs, the ticket renews their lease, so they
 * count exactly as long as the request does. It settles once: the in-flight hold becomes the actual
 * cost for the settlement window, and the running holds become a pending charge of that cost, which
 * the ticket keeps renewing until the charge is in the ledger's tables (whose commit then replaces it
 * in the store's view), so that no reader ever sees neither the hold nor the charge.
 */
export class Ticket {
  private done = false;
  private stopped = false;
  private timer: Timer | undefined;
  private readonly admittedAt: number;

  constructor(private readonly o: TicketOptions) {
    this.admittedAt = o.clock.now();
    if (o.holds) this.scheduleRenewal();
  }

  get id(): string {
    return this.o.id;
  }

  /** What the request holds while it runs (its estimate; 0 when it took no hold). */
  get held(): Nano {
    return this.o.holds ? this.o.held : 0n;
  }

  get settled(): boolean {
    return this.done;
  }

  private scheduleRenewal(): void {
    const { clock, renewUntil, leaseMs } = this.o;
    // A running request stops renewing at its deadline; a pending charge is renewed until it is recorded.
    if (this.stopped || (!this.done && clock.now() >= renewUntil)) return;
    const every = Math.floor(leaseMs / 3);
    this.timer = clock.schedule(this.done ? every : Math.min(every, renewUntil - clock.now()), () => {
      this.timer = undefined;
      if (this.stopped) return;
      // A failed renewal is retried at the next one; the lease leaves room for two to fail.
      this.o.holds?.renew(this.o.accountId, this.o.id, leaseMs).catch(() => undefined);
      this.scheduleRenewal();
    });
  }

  private stopRenewing(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  /**
   * Replaces the holds with the actual cost: done when it answers (at once with a store in this
   * process: awaitable.ts), and a failure of the store throws or rejects. The pending charge is then
   * renewed until `recorded` resolves (the charge is in the ledger's tables); `onError` is told if it
   * rejects. No promise of its own: every request settles through here.
   */
  settle(actual: ActualCost, recorded: Promise<void>, onError: (err: unknown) => void): Awaitable<void> {
    if (this.done) return;
    this.done = true;
    const { holds, clock, accountId, id, keyHash, windowMs, leaseMs, onEnded } = this.o;
    onEnded?.(clock.now() - this.admittedAt);
    if (!holds) return;
    const stop = () => this.stopRenewing();
    const renewUntilRecorded = () => {
      recorded.then(stop, (err: unknown) => {
        stop();
        onError(err);
      });
    };
    let settled: Awaitable<void>;
    try {
      settled = holds.settle({
        accountId,
        id,
        cost: actual.cost,
        byokUsage: actual.byokUsage,
        keyHash,
        periods: periodKeys(actual.chargedAt),
        windowMs,
        leaseMs,
      });
    } catch (err) {
      stop();
      throw err;
    }
    if (!isPromise(settled)) return renewUntilRecorded();
    return settled.then(renewUntilRecorded, (err: unknown) => {
      stop();
      throw err;
    });
  }
}
