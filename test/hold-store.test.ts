import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExpiryHeap } from '../src/limits/expiry-heap.js';
import type { HoldStore } from '../src/limits/hold-store.js';
import { MemoryHoldStore } from '../src/limits/memory-hold-store.js';

// One suite for every hold store implementation.
const stores: Array<[string, () => HoldStore]> = [['memory', () => new MemoryHoldStore()]];

for (const [name, make] of stores) {
  describe(`hold store: ${name}`, () => {
    const T = 1_000_000;

    it('admits holds while they fit under the limit, atomically under concurrency', async () => {
      const s = make();
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => s.acquire('a', `h${i}`, 3n, 20n, T, T + 1000)));
      expect(results.filter((r) => r.ok)).toHaveLength(6); // 6 × 3 = 18 ≤ 20 < 21
      expect(await s.held('a', T)).toBe(18n);
      const refused = results.find((r) => !r.ok);
      expect(refused).toMatchObject({ ok: false, held: 18n });
      await s.close();
    });

    it('a running hold stops counting at its deadline (a dead process cannot keep it)', async () => {
      const s = make();
      await s.acquire('a', 'h', 5n, null, T, T + 1000);
      expect(await s.held('a', T + 999)).toBe(5n);
      expect(await s.held('a', T + 1000)).toBe(0n);
      await s.close();
    });

    it('settling replaces the amount and keeps it for the window; release drops it at once', async () => {
      const s = make();
      await s.acquire('a', 'x', 5n, 10n, T, T + 100_000);
      await s.acquire('a', 'y', 4n, 10n, T, T + 100_000);
      await s.settle('a', 'x', 2n, T + 60_000);
      expect(await s.held('a', T)).toBe(6n);
      const refused = await s.acquire('a', 'z', 5n, 10n, T, T + 100_000);
      expect(refused.ok).toBe(false);
      if (!refused.ok) expect(refused.holds.find((h) => h.settling)).toEqual({ amount: 2n, until: T + 60_000, settling: true });
      await s.release('a', 'y');
      expect(await s.held('a', T)).toBe(2n);
      expect(await s.held('a', T + 60_000)).toBe(0n);
      await s.settle('a', 'missing', 9n, T + 60_000); // settling an unknown hold adds nothing
      expect(await s.held('a', T)).toBe(0n);
      await s.close();
    });

    it('issue 7 item 5: renew keeps a running hold counting past its lease; a settling or gone hold is not renewed', async () => {
      const s = make();
      await s.acquire('a', 'run', 5n, null, T, T + 1000);
      await s.acquire('a', 'done', 3n, null, T, T + 1000);
      await s.settle('a', 'done', 2n, T + 60_000);
      expect(await s.renew('a', 'run', T + 500, T + 1900)).toBe(true);
      expect(await s.held('a', T + 1500)).toBe(7n); // without the renewal, 'run' would end at T + 1000
      expect(await s.renew('a', 'done', T + 500, T + 120_000)).toBe(false);
      expect((await s.list('a', T + 1500)).find((h) => h.settling)).toEqual({ amount: 2n, until: T + 60_000, settling: true });
      expect(await s.held('a', T + 1900)).toBe(2n); // the lease ran out: only the settling hold is left
      expect(await s.renew('a', 'run', T + 1900, T + 5000)).toBe(false); // a lapsed hold is not brought back
      expect(await s.held('a', T + 1900)).toBe(2n);
      await s.release('a', 'done');
      expect(await s.renew('a', 'done', T + 1900, T + 5000)).toBe(false);
      expect(await s.held('a', T + 1900)).toBe(0n);
      await s.close();
    });

    it('scopes are independent', async () => {
      const s = make();
      await s.acquire('a', 'h', 5n, 5n, T, T + 10);
      expect((await s.acquire('b', 'h', 5n, 5n, T, T + 10)).ok).toBe(true);
      expect(await s.held('a', T)).toBe(5n);
      await s.close();
    });
  });
}

describe('expiry heap', () => {
  it('pops in deadline order whatever the push order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 1000 })), (times) => {
        const h = new ExpiryHeap();
        times.forEach((at, i) => h.push({ at, id: String(i), version: i }));
        const out: number[] = [];
        for (let e = h.pop(); e; e = h.pop()) out.push(e.at);
        expect(out).toEqual([...times].sort((x, y) => x - y));
      }),
    );
  });
});
