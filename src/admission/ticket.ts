import type { Nano } from '../ledger/money.js';
import type { HoldStore } from '../limits/hold-store.js';

/**
 * The holds one admitted request took. It settles once: the in-flight hold becomes the actual cost
 * for the settlement window; the running holds on the key and the balance are dropped once the charge
 * is durable in the ledger, so that no reader ever sees neither the hold nor the charge.
 */
export class Ticket {
  private done = false;

  constructor(
    private readonly holds: HoldStore,
    readonly id: string,
    private readonly running: readonly string[],
    private readonly budgetScope: string | undefined,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  get settled(): boolean {
    return this.done;
  }

  /** Replaces the holds with the actual cost; `durable` resolves when the charge is in the ledger. */
  async settle(actual: Nano, durable: Promise<void>): Promise<void> {
    if (this.done) return;
    this.done = true;
    if (this.budgetScope) await this.holds.settle(this.budgetScope, this.id, actual, this.now() + this.windowMs);
    await durable;
    await Promise.all(this.running.map((scope) => this.holds.release(scope, this.id)));
  }
}
