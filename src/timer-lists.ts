import type { Clock, Timer } from './clock.js';

/** Cancelled timers a list keeps before it may drop them all at once. */
const COMPACT_AFTER = 32;

class ListTimer implements Timer {
  constructor(
    private readonly list: DelayList,
    readonly at: number,
    /** Undefined once it ran or was cancelled. */
    public fn: (() => void) | undefined,
  ) {}

  cancel(): void {
    if (this.fn === undefined) return;
    this.fn = undefined;
    this.list.cancelled();
  }
}

class DelayList {
  private timers: ListTimer[] = [];
  /** The first timer not yet reached (the ones before it ran, or were cancelled). */
  private head = 0;
  /** Timers neither run nor cancelled. */
  private live = 0;
  private armed: Timer | undefined = undefined;
  /** Running what is due: the list is armed for its next timer once that is over. */
  private running = false;

  constructor(
    private readonly owner: TimerLists,
    private readonly delayMs: number,
  ) {}

  add(fn: () => void): ListTimer {
    const timer = new ListTimer(this, this.owner.time() + this.delayMs, fn);
    // Armed first: a base clock that fails to schedule leaves no timer behind that would run later.
    if (this.armed === undefined && !this.running) this.arm(this.delayMs);
    this.timers.push(timer);
    this.live++;
    return timer;
  }

  cancelled(): void {
    this.live--;
    if (this.live === 0) return this.empty();
    const dead = this.timers.length - this.head - this.live;
    if (dead > COMPACT_AFTER && dead > this.live) this.compact();
  }

  /** Keeps only the live timers, in order, from the head on. */
  private compact(): void {
    this.timers = this.timers.slice(this.head).filter((t) => t.fn !== undefined);
    this.head = 0;
  }

  /** Nothing pending: the base timer goes, and the list with it. */
  private empty(): void {
    this.armed?.cancel();
    this.armed = undefined;
    this.timers = [];
    this.head = 0;
    this.owner.drop(this.delayMs, this);
  }

  private arm(ms: number): void {
    this.armed = this.owner.base.schedule(ms, this.due);
  }

  /** The base timer: runs what is due, in order, then arms for what is next. */
  private readonly due = (): void => {
    this.armed = undefined;
    this.running = true;
    const now = this.owner.time();
    let ran = false;
    try {
      while (this.head < this.timers.length) {
        const timer = this.timers[this.head] as ListTimer;
        const fn = timer.fn;
        if (fn !== undefined && timer.at - this.owner.slackMs > now) break;
        this.head++;
        if (fn === undefined) continue;
        timer.fn = undefined;
        this.live--;
        fn();
      }
      ran = true;
    } finally {
      // A timer that threw ends this run (the throw goes on, as a timer's does); the ones after it
      // run on the next one, at once.
      this.running = false;
      this.next(ran ? now : undefined);
    }
  };

  private next(now: number | undefined): void {
    if (this.live === 0) return this.empty();
    if (this.head > COMPACT_AFTER && this.head * 2 > this.timers.length) this.compact();
    let first = this.timers[this.head] as ListTimer;
    while (first.fn === undefined) first = this.timers[++this.head] as ListTimer;
    // Whole milliseconds, as the base's timers keep them (a fraction would make Node a list of its own).
    this.arm(now === undefined ? 0 : Math.max(1, Math.ceil(first.at - now)));
  }
}

/**
 * Timers kept in lists by their delay, each list on one timer of a base clock (for its first timer):
 * what Node does inside setTimeout, without what each of Node's timers costs besides (a Timeout
 * object, its async-hook set-up, a native call to read the loop's time and another to clear it: ~1,500
 * instructions a timer under the bench's valgrind). A request sets four (its deadline, its holds'
 * renewal, its upstream call's limit, its answer's wait for its charge), all of fixed delays, and
 * ends nearly all of them before they are due.
 *
 * In a list every timer is due after the one before it, since they share a delay and `time` does not
 * go back (pass a monotonic time, read when asked: a reading kept from earlier would make a timer due
 * early by its age; a wall clock that stepped back would hold a list's later timers until its earlier
 * ones are due). A timer runs once `time` reaches its due time less the slack (1 ms on the system's
 * timers, which count whole milliseconds of the loop's time, read a fraction of one before `time`
 * may be). A delay no more than the slack, or past what setTimeout takes, goes to the base clock as it
 * is: such a timer set while its list runs would be due in the same run. Cancelled timers are dropped
 * when the list reaches them, or sooner once they outnumber the live ones, so a list holds no more
 * than about twice the timers that are pending.
 *
 * Its time (`now`) is the base clock's.
 */
export class TimerLists implements Clock {
  private readonly lists = new Map<number, DelayList>();

  /**
   * `time`: a monotonic clock, in milliseconds, that the lists order their timers by; `slackMs`: how
   * early a timer may run (0 on a base clock whose time is `time` itself, a test's).
   */
  constructor(
    readonly base: Clock,
    readonly time: () => number,
    readonly slackMs = 1,
  ) {}

  now(): number {
    return this.base.now();
  }

  schedule(delayMs: number, fn: () => void): Timer {
    if (!(delayMs > this.slackMs && delayMs >= 1 && delayMs <= MAX_DELAY_MS)) return this.base.schedule(delayMs, fn);
    let list = this.lists.get(delayMs);
    if (list === undefined) this.lists.set(delayMs, (list = new DelayList(this, delayMs)));
    return list.add(fn);
  }

  /** A list with nothing pending is forgotten (delays vary: a ticket's last renewal, a commit's wait). */
  drop(delayMs: number, list: DelayList): void {
    if (this.lists.get(delayMs) === list) this.lists.delete(delayMs);
  }
}

/** The longest delay setTimeout takes (a longer one runs at once). */
const MAX_DELAY_MS = 2 ** 31 - 1;
