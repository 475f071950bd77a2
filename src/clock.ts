/** Time comes in from outside, so tests can move it. Milliseconds since the Unix epoch. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to, for tests. */
export class ManualClock implements Clock {
  constructor(private current: number = Date.UTC(2026, 0, 5, 12, 0, 0)) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
