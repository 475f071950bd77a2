import { describe, expect, it } from 'vitest';
import { Cancellation, SHUTDOWN } from '../src/cancellation.js';
import { Inflight } from '../src/http/inflight.js';

describe('Inflight: the requests running now', () => {
  it('counts what was added and not yet deleted, reuses a freed slot, and takes a second delete of a slot as done', () => {
    const inflight = new Inflight();
    const a = inflight.add(new Cancellation());
    const b = inflight.add(new Cancellation());
    expect(inflight.size).toBe(2);
    inflight.delete(a);
    inflight.delete(a);
    expect(inflight.size).toBe(1);
    const c = inflight.add(new Cancellation());
    expect(c).toBe(a);
    expect(inflight.size).toBe(2);
    inflight.delete(b);
    inflight.delete(c);
    expect(inflight.size).toBe(0);
  });

  it('resolves idle() once the last running request ends, and at once when none runs', async () => {
    const inflight = new Inflight();
    await inflight.idle();
    const a = inflight.add(new Cancellation());
    const b = inflight.add(new Cancellation());
    let idle = false;
    const waiting = inflight.idle().then(() => (idle = true));
    inflight.delete(a);
    await Promise.resolve();
    expect(idle).toBe(false);
    inflight.delete(b);
    await waiting;
    expect(idle).toBe(true);
  });

  it('cancels every running request on shutdown, and none that ended', () => {
    const inflight = new Inflight();
    const running = [new Cancellation(), new Cancellation(), new Cancellation()];
    const slots = running.map((c) => inflight.add(c));
    inflight.delete(slots[1] as number);
    inflight.abortAll();
    expect(running.map((c) => c.signal.aborted)).toEqual([true, false, true]);
    expect((running[0]?.signal.reason as DOMException).name).toBe(SHUTDOWN);
  });
});
