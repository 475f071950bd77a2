import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdMap } from '../src/id-map.js';

interface Inner {
  ids: unknown[];
  vals: unknown[];
  free: unknown[];
  table: { hashes: Int32Array; values: Float64Array } | undefined;
}
const inner = (m: IdMap<unknown>) => m as unknown as Inner;

/** The arrays an IdMap keeps its entries in: the same objects for as long as it neither empties, grows nor shrinks by half. */
function storage(m: IdMap<unknown>): unknown[] {
  const i = inner(m);
  return [i.ids, i.vals, i.free, i.table?.hashes, i.table?.values];
}

describe('IdMap: a Map of ids that come and go, without rebuilding its table', () => {
  it('answers get, has, size, values and entries as a Map does, whatever the order of sets and deletes', () => {
    const id = fc.oneof(
      fc.integer({ min: 0, max: 500 }).map((i) => `gen-1796451816-123${i}`),
      fc.string({ maxLength: 4 }),
    );
    const op = fc.oneof(fc.record({ set: id, value: fc.integer() }), fc.record({ del: id }), fc.record({ get: id }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 2_000 }), (ops) => {
        const m = new IdMap<number>();
        const model = new Map<string, number>();
        for (const o of ops) {
          if ('set' in o) {
            expect(m.set(o.set, o.value)).toBe(m);
            model.set(o.set, o.value);
          } else if ('del' in o) expect(m.delete(o.del)).toBe(model.delete(o.del));
          else {
            expect(m.get(o.get)).toBe(model.get(o.get));
            expect(m.has(o.get)).toBe(model.has(o.get));
          }
          expect(m.size).toBe(model.size);
        }
        // By slot, not in the order added: the same entries either way.
        const byId = (a: [string, number], b: [string, number]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
        expect([...m.entries()].sort(byId)).toEqual([...model].sort(byId));
        expect([...m.values()].sort()).toEqual([...model.values()].sort());
      }),
      { numRuns: 60 },
    );
  });

  it('holds nothing once it is empty, and searches a few ids without a hash table', () => {
    const m = new IdMap<number>();
    const idOf = (i: number) => `gen-1796451816-${String(i).padStart(17, '0')}`;
    // A lone request at a time: no table is made.
    for (let i = 0; i < 100; i++) {
      m.set(idOf(i), i);
      expect(m.get(idOf(i))).toBe(i);
      expect(inner(m).table).toBeUndefined();
      expect(m.delete(idOf(i))).toBe(true);
      expect([inner(m).ids.length, inner(m).vals.length, inner(m).free.length]).toEqual([0, 0, 0]);
    }
    // Past 16 slots a table finds them; emptied, it goes with the rest.
    for (let i = 0; i < 40; i++) m.set(idOf(i), i);
    expect(inner(m).table).toBeDefined();
    for (let i = 0; i < 40; i++) expect(m.get(idOf(i))).toBe(i);
    for (let i = 0; i < 40; i++) m.delete(idOf(i));
    expect(inner(m).table).toBeUndefined();
    expect(inner(m).ids.length).toBe(0);
  });

  it('keeps no reference to a deleted value', () => {
    const m = new IdMap<object>();
    const gone = { gone: true };
    m.set('a', { a: 1 }).set('b', gone).set('c', { c: 1 });
    m.delete('b');
    expect(inner(m).vals).not.toContain(gone);
    expect(inner(m).ids).not.toContain('b');
  });

  it('keeps a value that is undefined or falsy apart from an id it does not hold', () => {
    const m = new IdMap<number | undefined>();
    m.set('a', 0).set('b', undefined);
    expect(m.get('a')).toBe(0);
    expect(m.has('b')).toBe(true);
    expect(m.get('b')).toBeUndefined();
    expect(m.has('c')).toBe(false);
    expect(m.delete('b')).toBe(true);
    expect(m.has('b')).toBe(false);
    expect(m.size).toBe(1);
  });

  it('a queue of requests (each added, then deleted a few hundred later) reuses its slots: its arrays are the same objects after 100,000 of them', () => {
    const m = new IdMap<{ n: number }>();
    const live = 300;
    const idOf = (i: number) => `gen-1796451816-${String(i).padStart(17, '0')}`;
    for (let i = 0; i < live; i++) m.set(idOf(i), { n: i });
    // One turn through the queue settles the free list at its largest.
    for (let i = live; i < 2 * live; i++) {
      m.set(idOf(i), { n: i });
      m.delete(idOf(i - live));
    }
    const before = storage(m);
    const slots = (before[0] as unknown[]).length;
    for (let i = 2 * live; i < 100_000; i++) {
      m.set(idOf(i), { n: i });
      expect(m.delete(idOf(i - live))).toBe(true);
    }
    const after = storage(m);
    after.forEach((a, i) => expect(a).toBe(before[i]));
    // No slot was added either (an array that grows gets a new backing store).
    expect((after[0] as unknown[]).length).toBe(slots);
    expect(slots).toBe(live + 1);
    expect(m.size).toBe(live);
    expect(m.get(idOf(99_999))).toEqual({ n: 99_999 });
    expect(m.get(idOf(100_000 - live - 1))).toBeUndefined();
  });
});
