import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ManualClock, type Clock, type Timer } from '../src/clock.js';
import { TimerLists } from '../src/timer-lists.js';

/** A ManualClock that counts the timers pending on it (set and neither run nor cancelled). */
function countingBase() {
  const clock = new ManualClock(0);
  let pending = 0;
  const base: Clock & { pending(): number; advance(ms: number): void } = {
    now: () => clock.now(),
    schedule(delayMs: number, fn: () => void): Timer {
      pending++;
      let done = false;
      const timer = clock.schedule(delayMs, () => {
        done = true;
        pending--;
        fn();
      });
      return {
        cancel: () => {
          if (done) return;
          done = true;
          pending--;
          timer.cancel();
        },
      };
    },
    pending: () => pending,
    advance: (ms: number) => clock.advance(ms),
  };
  return base;
}

/** Lists on a counting ManualClock, ordered by its time, with the system's slack of a millisecond. */
function lists() {
  const base = countingBase();
  return { base, timers: new TimerLists(base, () => base.now()) };
}

describe('timers kept in lists by delay', () => {
  it('runs timers of one delay each at its time, in order, on one timer of the base clock', () => {
    const { base, timers } = lists();
    const ran: string[] = [];
    timers.schedule(100, () => ran.push(`a@${base.now()}`));
    base.advance(30);
    timers.schedule(100, () => ran.push(`b@${base.now()}`));
    base.advance(30);
    timers.schedule(100, () => ran.push(`c@${base.now()}`));
    expect(base.pending()).toBe(1);
    base.advance(39);
    expect(ran).toEqual([]);
    base.advance(1);
    expect(ran).toEqual(['a@100']);
    base.advance(100);
    expect(ran).toEqual(['a@100', 'b@130', 'c@160']);
    expect(base.pending()).toBe(0);
  });

  it('never runs a cancelled timer, and leaves nothing on the base clock once every timer is cancelled', () => {
    const { base, timers } = lists();
    const ran: number[] = [];
    const handles = Array.from({ length: 200 }, (_, i) => timers.schedule(1_000, () => ran.push(i)));
    for (const [i, h] of handles.entries()) if (i !== 150) h.cancel();
    handles[150]?.cancel();
    handles[150]?.cancel(); // twice changes nothing
    expect(base.pending()).toBe(0);
    base.advance(5_000);
    expect(ran).toEqual([]);
  });

  it('keeps the timers left after most are cancelled, each at its time', () => {
    const { base, timers } = lists();
    const ran: number[] = [];
    const handles = Array.from({ length: 500 }, (_, i) => {
      base.advance(1);
      return timers.schedule(1_000, () => ran.push(i));
    });
    for (const [i, h] of handles.entries()) if (i % 100 !== 7) h.cancel();
    base.advance(1_000 - 500 + 7); // timer i was set at i + 1: 7 is due at 1,008
    expect(ran).toEqual([]);
    base.advance(1);
    expect(ran).toEqual([7]);
    base.advance(500);
    expect(ran).toEqual([7, 107, 207, 307, 407]);
  });

  it('a timer set while the list runs does not hold back those already due after it', () => {
    const { base, timers } = lists();
    const ran: string[] = [];
    // A renews itself (as a ticket's renewal does), B is due 10 ms after A.
    const renew = (n: number) => () => {
      ran.push(`a${n}@${base.now()}`);
      if (n < 2) timers.schedule(100, renew(n + 1));
    };
    timers.schedule(100, renew(0));
    base.advance(10);
    timers.schedule(100, () => ran.push(`b@${base.now()}`));
    base.advance(90);
    expect(ran).toEqual(['a0@100']);
    // One base timer for the list, armed for B (not a second one for the renewal's delay).
    expect(base.pending()).toBe(1);
    base.advance(310);
    expect(ran).toEqual(['a0@100', 'b@110', 'a1@200', 'a2@300']);
  });

  it('a timer that throws: the throw goes on, and the timers after it still run', () => {
    const { base, timers } = lists();
    const ran: string[] = [];
    timers.schedule(50, () => {
      throw new Error('boom');
    });
    timers.schedule(50, () => ran.push(`after@${base.now()}`));
    expect(() => base.advance(50)).toThrow('boom');
    base.advance(0);
    expect(ran).toEqual(['after@50']);
  });

  it('a timer that sets itself again at the shortest delay runs once a delay, never twice in one run', () => {
    // A delay of the slack or less goes to the base clock: set from a run of its list, it would be due
    // in that same run, and one that keeps setting itself would never let the run end.
    for (const delay of [1, 2]) {
      const { base, timers } = lists();
      const ran: number[] = [];
      const again = () => {
        ran.push(base.now());
        if (ran.length < 50) timers.schedule(delay, again);
      };
      timers.schedule(delay, again);
      base.advance(5 * delay);
      expect(ran).toEqual([1, 2, 3, 4, 5].map((n) => n * delay));
    }
  });

  it("runs nothing early on a clock without slack (a test clock, whose time is the lists' own)", () => {
    const base = countingBase();
    const timers = new TimerLists(base, () => base.now(), 0);
    const ran: string[] = [];
    timers.schedule(100, () => ran.push(`a@${base.now()}`));
    base.advance(1);
    timers.schedule(100, () => ran.push(`b@${base.now()}`));
    base.advance(99);
    expect(ran).toEqual(['a@100']);
    base.advance(1);
    expect(ran).toEqual(['a@100', 'b@101']);
  });

  it('leaves no timer behind when the base clock fails to schedule one', () => {
    const base = countingBase();
    let failing = true;
    const flaky: Clock = {
      now: () => base.now(),
      schedule: (ms, fn) => {
        if (failing) throw new Error('no timers now');
        return base.schedule(ms, fn);
      },
    };
    const timers = new TimerLists(flaky, () => base.now());
    const ran: string[] = [];
    expect(() => timers.schedule(100, () => ran.push('lost'))).toThrow('no timers now');
    failing = false;
    timers.schedule(100, () => ran.push(`kept@${base.now()}`));
    base.advance(500);
    expect(ran).toEqual(['kept@100']);
  });

  it('gives the base clock a delay no list takes as it is (under a millisecond, or past what setTimeout takes)', () => {
    const { base, timers } = lists();
    const ran: string[] = [];
    timers.schedule(0, () => ran.push('zero'));
    timers.schedule(0.5, () => ran.push('half'));
    expect(base.pending()).toBe(2);
    base.advance(1);
    expect(ran).toEqual(['zero', 'half']);
    const far = timers.schedule(2 ** 31, () => ran.push('far'));
    expect(base.pending()).toBe(1);
    far.cancel();
    expect(base.pending()).toBe(0);
  });

  it('runs every timer of any mix of delays, set and cancelled at any time, once and at its time (or a millisecond before), and no cancelled one', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), delay: fc.constantFrom(1, 5, 100, 250, 1_000) }),
      fc.record({ kind: fc.constant('cancel' as const), which: fc.nat() }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 400 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const { base, timers } = lists();
        const set: Array<{ at: number; delay: number; handle: Timer; cancelled: boolean; ranAt: number[] }> = [];
        const order = new Map<number, number[]>();
        for (const o of ops) {
          if (o.kind === 'set') {
            const i = set.length;
            const entry = { at: base.now() + o.delay, delay: o.delay, handle: undefined as unknown as Timer, cancelled: false, ranAt: [] as number[] };
            entry.handle = timers.schedule(o.delay, () => {
              entry.ranAt.push(base.now());
              order.set(o.delay, [...(order.get(o.delay) ?? []), i]);
            });
            set.push(entry);
          } else if (o.kind === 'cancel' && set.length > 0) {
            const entry = set[o.which % set.length];
            if (entry && entry.ranAt.length === 0) {
              entry.handle.cancel();
              entry.cancelled = true;
            }
          } else if (o.kind === 'wait') base.advance(o.ms);
        }
        base.advance(2_000);
        for (const entry of set) {
          if (entry.cancelled) expect(entry.ranAt).toEqual([]);
          else {
            expect(entry.ranAt).toHaveLength(1);
            expect(entry.ranAt[0]).toBeGreaterThanOrEqual(entry.at - 1);
            expect(entry.ranAt[0]).toBeLessThanOrEqual(entry.at);
          }
        }
        // Timers of one delay run in the order they were set.
        for (const ids of order.values()) expect(ids).toEqual([...ids].sort((a, b) => a - b));
        expect(base.pending()).toBe(0);
      }),
      { numRuns: 300 },
    );
  });
});
