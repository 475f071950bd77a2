import type { Counter, CounterStore, HitResult } from './counter-store.js';

const SWEEP_EVERY_MS = 10_000;

/** Counters in this process: one node's rate limits, exact, with no round trip. */
export class MemoryCounterStore implements CounterStore {
  private readonly counts = new Map<string, { count: number; resetAt: number }>();
  private nextSweep = 0;

  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_EVERY_MS;
    for (const [key, c] of this.counts) if (c.resetAt <= now) this.counts.delete(key);
  }

  private current(key: string, now: number): number {
    const c = this.counts.get(key);
    return c && c.resetAt > now ? c.count : 0;
  }

  async hit(counters: readonly Counter[], now: number): Promise<HitResult> {
    this.sweep(now);
    for (let i = 0; i < counters.length; i++) {
      const c = counters[i] as Counter;
      const count = this.current(c.key, now);
      if (count >= c.limit) return { ok: false, failed: i, count };
    }
    const counts = counters.map((c) => {
      const count = this.current(c.key, now) + 1;
      this.counts.set(c.key, { count, resetAt: c.resetAt });
      return count;
    });
    return { ok: true, counts };
  }

  async add(counters: ReadonlyArray<{ key: string; n: number; resetAt: number }>, now: number): Promise<number[]> {
    this.sweep(now);
    return counters.map((c) => {
      const count = this.current(c.key, now) + c.n;
      this.counts.set(c.key, { count, resetAt: c.resetAt });
      return count;
    });
  }

  async peek(keys: readonly string[], now: number): Promise<number[]> {
    return keys.map((k) => this.current(k, now));
  }

  async close(): Promise<void> {
    this.counts.clear();
  }
}
