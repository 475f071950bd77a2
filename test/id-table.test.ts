import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { IdTable, idHash } from '../src/id-table.js';

/** A table over an id list (value = index in it), beside a Map, as SettlingQueue uses it. */
function tableAndModel() {
  const ids: string[] = [];
  const table = new IdTable((n) => ids[n]);
  const model = new Map<string, number>();
  return {
    table,
    model,
    add(id: string) {
      ids.push(id);
      table.add(idHash(id), ids.length - 1);
      model.set(id, ids.length - 1);
    },
    remove(id: string) {
      const expected = model.get(id) ?? -1;
      model.delete(id);
      expect(table.remove(id, idHash(id))).toBe(expected);
    },
  };
}

describe('IdTable: request ids to numbers, without a Map', () => {
  it('finds what was added and not removed, whatever the order, across growth, wrap-around and shrinking', () => {
    // Few distinct ids (so removals hit), and ids whose hashes share their low bits (long probe runs).
    const id = fc.oneof(
      fc.integer({ min: 0, max: 3_000 }).map((i) => `gen-${i}`),
      fc.string({ maxLength: 6 }),
    );
    const op = fc.oneof(fc.record({ add: id }), fc.record({ remove: id }));
    fc.assert(
      fc.property(fc.array(op, { maxLength: 4_000 }), (ops) => {
        const t = tableAndModel();
        for (const o of ops) {
          if ('add' in o) {
            if (!t.model.has(o.add)) t.add(o.add);
          } else t.remove(o.remove);
          expect(t.table.size).toBe(t.model.size);
          const probe = 'add' in o ? o.add : o.remove;
          expect(t.table.find(probe, idHash(probe))).toBe(t.model.get(probe) ?? -1);
        }
        for (const [k] of [...t.model]) t.remove(k);
        expect(t.table.size).toBe(0);
      }),
      { numRuns: 40 },
    );
  });

  it('a queue: ids added at one end and removed at the other keep being found, and the table does not grow with the count', () => {
    const t = tableAndModel();
    for (let i = 0; i < 60_000; i++) {
      t.add(`gen-${i}`);
      if (i >= 5_000) t.remove(`gen-${i - 5_000}`);
    }
    expect(t.table.size).toBe(5_000);
    t.remove('gen-55000');
    t.remove('gen-54999');
    expect((t.table as unknown as { hashes: Int32Array }).hashes.length).toBe(16_384);
    for (let i = 55_001; i < 60_000; i++) t.remove(`gen-${i}`);
    expect((t.table as unknown as { hashes: Int32Array }).hashes.length).toBe(0); // empty: no arrays
  });

  it('hashes as 32-bit FNV-1a (its published values), an id longer than 16 characters by its last 16', () => {
    expect(idHash('')).toBe(0x811c9dc5 | 0);
    expect(idHash('a')).toBe(0xe40c292c | 0);
    expect(idHash('foobar')).toBe(0xbf9cf968 | 0);
    expect(idHash('gen-1796451816-123abcdefghijklmn')).toBe(idHash('23abcdefghijklmn'));
    expect(idHash('gen-1796451816-123abcdefghijklmn')).not.toBe(idHash('gen-1796451816-123abcdefghijklmo'));
  });
});
