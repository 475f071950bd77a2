import { describe, expect, it } from 'vitest';
import { Cancellation, SHUTDOWN } from '../src/cancellation.js';
import { Inflight } from '../src/http/inflight.js';

describe('Inflight: the requests running now', () => {
  it('counts what was added and not yet deleted, reuses a freed slot, and ignores a second delete, even once its slot is reused', () => {
    const inflight = new Inflight();
    const [ca, cb, cc] = [new Cancellation(), new Cancellation(), new Cancellation()];
    const a = inflight.add(ca);
    const b = inflight.add(cb);
    expect(inflight.size).toBe(2);
    inflight.delete(a, ca);
    inflight.delete(a, ca);
    expect(inflight.size).toBe(1);
    const c = inflight.add(cc);
    expect(c).toBe(a);
    // A late delete of the first request leaves the one now in its slot running.
    inflight.delete(a, ca);
    expect(inflight.size).toBe(2);
    inflight.abortAll();
    expect(cc.signal.aborted).toBe(true);
    inflight.delete(b, cb);
    inflight.delete(c, cc);
    expect(inflight.size).toBe(0);
  });

  it('resolves idle() once the last running request ends, and at once when none runs', async () => {
    const inflight = new Inflight();
    await inflight.idle();
    const [first, second] = [new Cancellation(), new Cancellation()];
    const a = inflight.add(first);
    const b = inflight.add(second);
    let idle = false;
    const waiting = inflight.idle().then(() => (idle = true));
    inflight.delete(a, first);
    await Promise.resolve();
    expect(idle).toBe(false);
    inflight.delete(b, second);
    await waiting;
    expect(idle).toBe(true);
  });

  it('cancels every running request on shutdown, and none that ended', () => {
    const inflight = new Inflight();
    const running = [new Cancellation(), new Cancellation(), new Cancellation()];
    const slots = running.map((c) => inflight.add(c));
    inflight.delete(slots[1] as number, running[1] as Cancellation);
    inflight.abortAll();
    expect(running.map((c) => c.signal.aborted)).toEqual([true, false, true]);
    expect((running[0]?.signal.reason as DOMException).name).toBe(SHUTDOWN);
  });
});
