import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SettlingQueue } from '../src/limits/settling-queue.js';

describe('SettlingQueue: the in-flight budget holds an ended request for exactly its settlement window', () => {
  it('expires each entry at its own time, those added in order', () => {
    const q = new SettlingQueue();
    q.add('a', 5n, 100);
    q.add('b', 7n, 200);
    expect(q.total).toBe(12n);
    q.expire(99);
    expect(q.total).toBe(12n);
    q.expire(100);
    expect(q.total).toBe(7n);
    expect([...q.entries()]).toEqual([{ amount: 7n, until: 200 }]);
    q.expire(200);
    expect(q.total).toBe(0n);
    expect(q.size).toBe(0);
  });

  it('an entry that closes before the last (the clock stepped back, a shorter window) still expires on time', () => {
    const q = new SettlingQueue();
    q.add('a', 1n, 60_000);
    q.add('b', 2n, 60_010);
    q.add('c', 4n, 1_000); // the window was cut to 1 s
    q.expire(1_000);
    expect(q.total).toBe(3n);
    expect([...q.entries()].map((e) => e.until)).toEqual([60_000, 60_010]);
  });

  it('one entry a request id: adding again replaces it, taking it out stops it counting', () => {
    const q = new SettlingQueue();
    q.add('a', 5n, 100);
    q.add('a', 3n, 300);
    expect(q.total).toBe(3n);
    expect(q.size).toBe(1);
    q.expire(100); // the replaced entry's time: nothing that counts goes
    expect(q.total).toBe(3n);
    expect(q.take('a')).toBe(true);
    expect(q.take('a')).toBe(false);
    expect(q.total).toBe(0n);
    expect([...q.entries()]).toEqual([]);
  });

  /** Runs `ops` against a SettlingQueue and a plain map of the entries, checking the total and the size after each. */
  const againstModel = (ops: Array<{ add: number; amount: bigint; at: number } | { take: number } | { expire: number }>) => {
    const q = new SettlingQueue();
    const model = new Map<string, { amount: bigint; until: number }>();
    for (const o of ops) {
      if ('add' in o) {
        q.add(`g${o.add}`, o.amount, o.at);
        model.set(`g${o.add}`, { amount: o.amount, until: o.at });
      } else if ('take' in o) {
        expect(q.take(`g${o.take}`)).toBe(model.delete(`g${o.take}`));
      } else {
        q.expire(o.expire);
        for (const [id, e] of model) if (e.until <= o.expire) model.delete(id);
      }
      expect(q.total).toBe([...model.values()].reduce((t, e) => t + e.amount, 0n));
      expect(q.size).toBe(model.size);
    }
    const sorted = [...model.values()].map((e) => e.until).sort((a, b) => a - b);
    expect([...q.entries()].map((e) => e.until)).toEqual(sorted);
  };

  it('matches a plain map over any sequence of adds, takes and expiries, across compactions', () => {
    const op = fc.oneof(
      fc.record({ add: fc.integer({ min: 0, max: 30 }), amount: fc.bigInt({ min: 1n, max: 10n ** 12n }), at: fc.integer({ min: 0, max: 5_000 }) }),
      fc.record({ take: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ expire: fc.integer({ min: 0, max: 5_000 }) }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 3_000 }), againstModel), { numRuns: 60 });
  });

  it('matches a plain map when entries come mostly in order (the ring), now and then earlier or beyond 64 bits (the list)', () => {
    // Times that mostly rise, as `now + window` does; a step back now and then; amounts now and then past 2^63.
    const step = fc.oneof({ arbitrary: fc.integer({ min: 0, max: 20 }), weight: 9 }, { arbitrary: fc.integer({ min: -300, max: -1 }), weight: 1 });
    const amount = fc.oneof(
      { arbitrary: fc.bigInt({ min: 1n, max: 10n ** 12n }), weight: 19 },
      { arbitrary: fc.bigInt({ min: 2n ** 63n - 2n, max: 2n ** 70n }), weight: 1 },
    );
    const op = fc.oneof(
      { arbitrary: fc.record({ add: fc.integer({ min: 0, max: 400 }), amount, step }), weight: 6 },
      { arbitrary: fc.record({ take: fc.integer({ min: 0, max: 400 }) }), weight: 1 },
      { arbitrary: fc.record({ expireBehind: fc.integer({ min: 0, max: 600 }) }), weight: 2 },
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 2_000 }), (raw) => {
        let at = 1_000;
        againstModel(
          raw.map((o) => {
            if ('add' in o) {
              at += o.step;
              return { add: o.add, amount: o.amount, at };
            }
            return 'take' in o ? o : { expire: at - o.expireBehind };
          }),
        );
      }),
      { numRuns: 60 },
    );
  });

  it('an amount beyond 64 bits counts exactly', () => {
    const q = new SettlingQueue();
    q.add('a', 2n ** 64n + 7n, 100);
    q.add('b', 2n ** 63n - 1n, 200);
    expect(q.total).toBe(2n ** 64n + 7n + 2n ** 63n - 1n);
    expect([...q.entries()]).toEqual([
      { amount: 2n ** 64n + 7n, until: 100 },
      { amount: 2n ** 63n - 1n, until: 200 },
    ]);
    q.expire(100);
    expect(q.total).toBe(2n ** 63n - 1n);
  });

  it('compacts: a long run of adds and expiries keeps only what still counts', () => {
    const q = new SettlingQueue();
    for (let t = 0; t < 50_000; t++) {
      q.add(`g${t}`, 1n, t + 600);
      q.expire(t);
    }
    expect(q.size).toBe(600);
    expect(q.total).toBe(600n);
    // The ring holds the 600 that count (a power of two above them), not the 50,000 added.
    expect((q as unknown as { mask: number }).mask + 1).toBe(1024);
  });

  it('holds no arrays while empty, and small ones for a few entries (the limits store keeps a queue for each of up to 100,000 accounts)', () => {
    const q = new SettlingQueue();
    const inside = q as unknown as { mask: number; numbers: { hashes: Int32Array } };
    expect([inside.mask + 1, inside.numbers.hashes.length]).toEqual([0, 0]);
    expect(q.take('a')).toBe(false);
    q.add('a', 1n, 100);
    q.add('b', 2n, 200);
    expect([inside.mask + 1, inside.numbers.hashes.length]).toEqual([8, 16]);
    q.expire(200);
    expect([inside.mask + 1, inside.numbers.hashes.length]).toEqual([0, 0]);
    q.add('c', 3n, 300);
    expect(q.total).toBe(3n);
    expect([...q.entries()]).toEqual([{ amount: 3n, until: 300 }]);
  });

  it('gives back what a burst grew once the burst has expired', () => {
    const q = new SettlingQueue();
    for (let i = 0; i < 100_000; i++) q.add(`g${i}`, 1n, 1_000 + i);
    expect((q as unknown as { mask: number }).mask + 1).toBe(131_072);
    q.expire(1_000 + 99_899); // 100 left
    expect(q.size).toBe(100);
    expect(q.total).toBe(100n);
    expect((q as unknown as { mask: number }).mask + 1).toBeLessThanOrEqual(256);
    q.add('after', 5n, 200_000);
    expect([...q.entries()].at(-1)).toEqual({ amount: 5n, until: 200_000 });
  });
});
