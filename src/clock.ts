/** A scheduled call that has not run yet; `cancel()` stops it (a no-op once it ran). */
export interface Timer {
  cancel(): void;
}

/**
 * Time comes in from outside, so tests can move it. Milliseconds since the Unix epoch; `schedule`
 * runs `fn` once, `delayMs` from now on this clock.
 */
export interface Clock {
  now(): number;
  schedule(delayMs: number, fn: () => void): Timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule: (delayMs, fn) => {
    // The work a timer belongs to (a request) keeps the process alive, not the timer.
    const t = setTimeout(fn, delayMs).unref();
    return { cancel: () => clearTimeout(t) };
  },
};

interface ManualTimer {
  at: number;
  seq: number;
  fn: () => void;
}

/** A clock that only moves when told to, for tests. Moving it runs what was scheduled, in time order. */
export class ManualClock implements Clock {
  private timers: ManualTimer[] = [];
  private seq = 0;

  constructor(private current: number = Date.UTC(2026, 0, 5, 12, 0, 0)) {}

  now(): number {
    return this.current;
  }

  schedule(delayMs: number, fn: () => void): Timer {
    const timer: ManualTimer = { at: this.current + Math.max(0, delayMs), seq: this.seq++, fn };
    this.timers.push(timer);
    return { cancel: () => (this.timers = this.timers.filter((t) => t !== timer)) };
  }

  advance(ms: number): void {
    this.set(this.current + ms);
  }

  /** Moves to `ms`; going forward runs each timer due by then at its own time (including ones they schedule). */
  set(ms: number): void {
    for (;;) {
      const next = this.timers.filter((t) => t.at <= ms).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = Math.max(this.current, next.at);
      next.fn();
    }
    this.current = ms;
  }
}
