import type { Clock, Timer } from '../clock.js';
import type { Nano } from '../ledger/money.js';
import type { HoldStore } from '../limits/hold-store.js';

/** How long a running hold counts without being renewed: a dead process's holds lapse within it. */
export const RUNNING_HOLD_LEASE_MS = 30_000;
/** How often a running request renews its holds' lease (three renewals per lease). */
export const LEASE_RENEW_EVERY_MS = RUNNING_HOLD_LEASE_MS / 3;

export interface TicketOptions {
  holds: HoldStore;
  clock: Clock;
  id: string;
  /** The running holds on the key and the balance, dropped once the charge is durable. */
  running: readonly string[];
  /** The in-flight budget hold, which becomes the actual cost for the settlement window. */
  budgetScope: string | undefined;
  windowMs: number;
  /** Renewals stop by then whatever happens (the request deadline, plus time for its charge to land). */
  renewUntil: number;
  /** Told how long the request ran (admitted to settled), once. */
  onEnded?: (durationMs: number) => void;
}

/**
 * The holds one admitted request took. While the request runs, the ticket renews their lease, so they
 * count exactly as long as the request does. It settles once: the in-flight hold becomes the actual
 * cost for the settlement window; the running holds on the key and the balance are dropped once the
 * charge is durable in the ledger (renewed until then), so that no reader ever sees neither the hold
 * nor the charge.
 */
export class Ticket {
  private done = false;
  private released = false;
  private timer: Timer | undefined;
  private readonly admittedAt: number;

  constructor(private readonly o: TicketOptions) {
    this.admittedAt = o.clock.now();
    this.scheduleRenewal();
  }

  get id(): string {
    return this.o.id;
  }

  get settled(): boolean {
    return this.done;
  }

  private scheduleRenewal(): void {
    const { clock, renewUntil } = this.o;
    if (this.released || clock.now() >= renewUntil) return;
    this.timer = clock.schedule(Math.min(LEASE_RENEW_EVERY_MS, renewUntil - clock.now()), () => {
      this.timer = undefined;
      this.renew();
      this.scheduleRenewal();
    });
  }

  /** Extends the lease of every hold that still runs (the budget hold only until the request settles). */
  private renew(): void {
    if (this.released) return;
    const { holds, clock, id, running, budgetScope, renewUntil } = this.o;
    const now = clock.now();
    const until = Math.min(now + RUNNING_HOLD_LEASE_MS, renewUntil);
    const scopes = this.done || !budgetScope ? running : [...running, budgetScope];
    // A failed renewal is retried at the next one; the lease leaves room for two to fail.
    for (const scope of scopes) holds.renew(scope, id, now, until).catch(() => undefined);
  }

  private stopRenewing(): void {
    this.released = true;
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** Replaces the holds with the actual cost; `durable` resolves when the charge is in the ledger. */
  async settle(actual: Nano, durable: Promise<void>): Promise<void> {
    if (this.done) return;
    this.done = true;
    const { holds, clock, id, running, budgetScope, windowMs, onEnded } = this.o;
    onEnded?.(clock.now() - this.admittedAt);
    try {
      if (budgetScope) await holds.settle(budgetScope, id, actual, clock.now() + windowMs);
      await durable;
    } finally {
      this.stopRenewing();
    }
    await Promise.all(running.map((scope) => holds.release(scope, id)));
  }
}
