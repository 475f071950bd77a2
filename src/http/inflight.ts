import { SHUTDOWN, type Cancellation } from '../cancellation.js';

/**
 * The requests running now, so that shutdown can wait for them and, past its grace, cancel them. Each
 * takes a slot of an array that only grows (a freed slot is taken again) rather than an entry of a
 * Set: a long-lived Set rebuilds its table in V8's old generation every few additions and deletions
 * (id-map.ts).
 */
export class Inflight {
  private readonly running: Array<Cancellation | undefined> = [];
  private readonly free: number[] = [];
  private count = 0;
  private idleWaiters: Array<() => void> = [];

  /** Counts `controller` as running: the slot to give `delete` when it ends. */
  add(controller: Cancellation): number {
    const slot = this.free.length > 0 ? (this.free.pop() as number) : this.running.length;
    this.running[slot] = controller;
    this.count++;
    return slot;
  }

  /**
   * `controller`'s request, which `add` gave `slot`, ended. A second call for it does nothing, even
   * once the slot holds another request.
   */
  delete(slot: number, controller: Cancellation): void {
    if (this.running[slot] !== controller) return;
    this.running[slot] = undefined;
    this.free.push(slot);
    if (--this.count === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      waiters.forEach((w) => w());
    }
  }

  get size(): number {
    return this.count;
  }

  /** Resolves once nothing is running. */
  idle(): Promise<void> {
    if (this.count === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Cancels every running request: the gateway is shutting down (its answer and log line say so). */
  abortAll(): void {
    for (const c of this.running) c?.abort(new DOMException('the gateway is shutting down', SHUTDOWN));
  }
}
