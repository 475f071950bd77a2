// Imported: globalThis's performance is a getter, called on every use (bench/README.md, thirty-fifth session).
import { performance } from 'node:perf_hooks';
import { systemClock, type Clock, type Timer } from './clock.js';
import { TimerLists } from './timer-lists.js';

/**
 * The gateway's clock: the system's, read once an event-loop turn. A request reads the time ~20 times
 * on its way through (the key and account caches' ages, the DDoS window, its holds, its ticket, its
 * charge); each read is a call into V8's runtime and the kernel's clock (~55 ns here, ~700 instructions
 * under the bench's valgrind), and within one turn they would all read the same millisecond or the
 * next. So the first read in a turn is kept, and forgotten when the turn reaches its check phase (an
 * immediate), as nginx caches its time per event-loop iteration.
 *
 * What a reading may lag by is what is left of the turn it was taken in: the callbacks of that turn's
 * poll phase run after it (under load, a few milliseconds of requests); one taken in a check phase
 * lasts through the next turn's timers and poll phase, which do not wait while its immediate is due.
 * Nothing the gateway times needs finer than that: holds' leases and settlement windows are seconds,
 * the caches' ages seconds, the DDoS and rate-limit windows a second and more, a generation's latency
 * is in milliseconds.
 * Timers (`schedule`) are the base clock's, kept in lists by delay (timer-lists.ts).
 */
export class TurnClock implements Clock {
  private reading = 0;
  private fresh = false;
  private readonly forget = (): void => {
    this.fresh = false;
  };
  private readonly timers: TimerLists;

  /**
   * `read` is the clock read (Date.now); `base` schedules. Its timers are ordered by performance.now(),
   * read when one is set (a reading kept for the turn would make a timer set late in a long turn due
   * early by the turn's length), or, on a base clock other than the system's (a test's), by that
   * clock's own time, to the millisecond.
   */
  constructor(
    private readonly read: () => number = Date.now,
    base: Clock = systemClock,
  ) {
    this.timers = base === systemClock ? new TimerLists(base, () => performance.now()) : new TimerLists(base, () => base.now(), 0);
  }

  now(): number {
    if (!this.fresh) {
      this.reading = this.read();
      this.fresh = true;
      // Referenced, so that while it waits the loop does not sleep in its poll phase: a reading taken
      // in a check phase (an immediate's) is forgotten in the next turn's without the loop going idle
      // in between, where an unreferenced one would be kept through the idle wait and lag by all of it.
      setImmediate(this.forget);
    }
    return this.reading;
  }

  schedule(delayMs: number, fn: () => void): Timer {
    return this.timers.schedule(delayMs, fn);
  }
}
