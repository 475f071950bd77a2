import { describe, expect, it } from 'vitest';
import { ManualClock } from '../src/clock.js';
import { TurnClock } from '../src/turn-clock.js';

/** A clock read that counts its calls and moves a millisecond each time. */
function countingRead(start = 1_000) {
  let t = start;
  const read = () => {
    read.calls++;
    return t++;
  };
  read.calls = 0;
  return read;
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the gateway clock, read once an event-loop turn', () => {
  it('reads the system clock once in a turn, however often it is asked', () => {
    const read = countingRead();
    const clock = new TurnClock(read);
    const readings = Array.from({ length: 20 }, () => clock.now());
    expect(new Set(readings)).toEqual(new Set([1_000]));
    expect(read.calls).toBe(1);
  });

  it('keeps the reading through the promise continuations of the turn, and reads again in the next turn', async () => {
    const read = countingRead();
    const clock = new TurnClock(read);
    const first = clock.now();
    await Promise.resolve();
    expect(clock.now()).toBe(first);
    await nextTurn();
    expect(clock.now()).toBe(first + 1);
    expect(clock.now()).toBe(first + 1);
    await nextTurn();
    expect(clock.now()).toBe(first + 2);
    expect(read.calls).toBe(3);
  });

  it('a turn that does not ask reads nothing', async () => {
    const read = countingRead();
    const clock = new TurnClock(read);
    clock.now();
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(read.calls).toBe(1);
  });

  it('holds the event loop awake while it keeps a reading, so that the loop never sleeps on a reading it will then hand out', async () => {
    // The reading is forgotten by an immediate; were that immediate unreferenced, a loop with nothing
    // else due would sleep in its poll phase first, and an I/O callback that woke it would be handed a
    // reading as old as the sleep. A referenced immediate is an active resource: the loop does not wait.
    await nextTurn();
    const immediates = () => process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length;
    const before = immediates();
    const clock = new TurnClock(countingRead());
    clock.now();
    expect(immediates()).toBe(before + 1);
    clock.now();
    expect(immediates()).toBe(before + 1);
    await nextTurn();
    expect(immediates()).toBe(before);
  });

  it('schedules on the clock it is given, not at its reading', () => {
    const base = new ManualClock(0);
    const clock = new TurnClock(() => base.now(), base);
    const ran: number[] = [];
    clock.schedule(100, () => ran.push(base.now()));
    base.advance(99);
    expect(ran).toEqual([]);
    base.advance(1);
    expect(ran).toEqual([100]);
  });
});
