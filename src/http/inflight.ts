import { SHUTDOWN, type Cancellation } from '../cancellation.js';

/** The requests running now, so that shutdown can wait for them and, past its grace, cancel them. */
export class Inflight {
  private readonly running = new Set<Cancellation>();
  private idleWaiters: Array<() => void> = [];

  add(controller: Cancellation): void {
    this.running.add(controller);
  }

  delete(controller: Cancellation): void {
    this.running.delete(controller);
    if (this.running.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      waiters.forEach((w) => w());
    }
  }

  get size(): number {
    return this.running.size;
  }

  /** Resolves once nothing is running. */
  idle(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Cancels every running request: the gateway is shutting down (its answer and log line say so). */
  abortAll(): void {
    for (const c of this.running) c.abort(new DOMException('the gateway is shutting down', SHUTDOWN));
  }
}
