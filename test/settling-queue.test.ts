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

  it('matches a plain map over any sequence of adds, takes and expiries, across compactions', () => {
    const op = fc.oneof(
      fc.record({ add: fc.integer({ min: 0, max: 30 }), amount: fc.bigInt({ min: 1n, max: 10n ** 12n }), at: fc.integer({ min: 0, max: 5_000 }) }),
      fc.record({ take: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ expire: fc.integer({ min: 0, max: 5_000 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 3_000 }), (ops) => {
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
      }),
      { numRuns: 60 },
    );
  });

  it('compacts: a long run of adds and expiries keeps only what still counts', () => {
    const q = new SettlingQueue();
    for (let t = 0; t < 50_000; t++) {
      q.add(`g${t}`, 1n, t + 600);
      q.expire(t);
    }
    expect(q.size).toBe(600);
    expect(q.total).toBe(600n);
    expect((q as unknown as { items: unknown[] }).items.length).toBeLessThan(2 * 1024 + 600);
  });
});
