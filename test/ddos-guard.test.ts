import { describe, expect, it } from 'vitest';
import { DdosGuard } from '../src/admission/ddos-guard.js';
import { ManualClock } from '../src/clock.js';
import type { Awaitable } from '../src/awaitable.js';
import { GatewayError } from '../src/errors.js';
import type { CounterStore } from '../src/limits/counter-store.js';
import { limitsUnavailable } from '../src/limits/limits-unavailable.js';
import { counterStores } from './helpers/counter-stores.js';

const T = Date.UTC(2026, 10, 18, 9, 0, 0, 100);
/** The status a check answers: it throws at once when it can decide in this process, or rejects. */
const status = async (check: () => Awaitable<void>) => {
  try {
    await check();
    return 200;
  } catch (e) {
    return e instanceof GatewayError ? e.status : 500;
  }
};

/** A store that counts its calls, and fails them while `down`. */
function watched(inner: CounterStore) {
  const seen = { add: 0, hit: 0, down: false };
  const fail = () => Promise.reject(limitsUnavailable(new Error('down')));
  const store: CounterStore = {
    add: (c, now) => (seen.add++, seen.down ? fail() : inner.add(c, now)),
    hit: (c, now) => (seen.hit++, seen.down ? fail() : inner.hit(c, now)),
    peek: (k, now) => inner.peek(k, now),
    close: () => inner.close(),
  };
  return { store, seen };
}

for (const [name, make] of counterStores) {
  describe(`DDoS guard on the ${name} counter store`, () => {
    it('counts an address here and sends its count in batches: no round trip a request, exact in one process', async () => {
      const made = await make();
      const clock = new ManualClock(T);
      const { store, seen } = watched(made.store);
      const guard = new DdosGuard(store, 50, clock, { flushEveryMs: 5 });
      try {
        const first = await Promise.all(Array.from({ length: 60 }, () => status(() => guard.check('10.0.0.1'))));
        expect(first.filter((s) => s === 200)).toHaveLength(50);
        expect(first.filter((s) => s === 429)).toHaveLength(10);
        expect(await status(() => guard.check('10.0.0.2'))).toBe(200); // another address has its own count
        await guard.flush();
        expect(seen).toMatchObject({ add: 1, hit: 0 });
        expect(await store.peek([`ddos:{${T - 100}}:10.0.0.1`], T)).toEqual([50]);
        clock.advance(900); // the next second starts afresh
        expect(await status(() => guard.check('10.0.0.1'))).toBe(200);
      } finally {
        guard.close();
        await made.close();
      }
    });

    it('across processes: each learns what the others counted at its next flush', async () => {
      const made = await make();
      const clock = new ManualClock(T);
      const [a, b] = [new DdosGuard(made.store, 10, clock, { flushEveryMs: 5 }), new DdosGuard(made.store, 10, clock, { flushEveryMs: 5 })];
      try {
        for (let i = 0; i < 6; i++) expect(await status(() => a.check('10.0.0.9'))).toBe(200);
        await a.flush();
        for (let i = 0; i < 4; i++) expect(await status(() => b.check('10.0.0.9'))).toBe(200);
        await b.flush(); // b now knows the address made 10 requests this second
        expect(await status(() => b.check('10.0.0.9'))).toBe(429);
        await a.flush(); // a sends nothing new; it learns the count at its next flush with counts to send
        expect(await status(() => a.check('10.0.0.9'))).toBe(200); // within one flush's slack
        await a.flush();
        expect(await status(() => a.check('10.0.0.9'))).toBe(429);
      } finally {
        a.close();
        b.close();
        await made.close();
      }
    });

    it('fails closed when the store does not answer: each request then goes to it (503), until it answers again', async () => {
      const made = await make();
      const clock = new ManualClock(T);
      const { store, seen } = watched(made.store);
      const guard = new DdosGuard(store, 1000, clock, { flushEveryMs: 5 });
      try {
        expect(await status(() => guard.check('10.0.0.3'))).toBe(200);
        seen.down = true;
        await guard.flush(); // the batch fails
        expect(await status(() => guard.check('10.0.0.3'))).toBe(503);
        expect(await status(() => guard.check('10.0.0.3'))).toBe(503);
        seen.down = false;
        expect(await status(() => guard.check('10.0.0.3'))).toBe(200); // one round trip, then batches again
        const hits = seen.hit;
        expect(await status(() => guard.check('10.0.0.3'))).toBe(200);
        expect(seen.hit).toBe(hits);
      } finally {
        guard.close();
        await made.close();
      }
    });
  });
}
