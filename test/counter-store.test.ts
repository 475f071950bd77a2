import { afterEach, describe, expect, it } from 'vitest';
import { counterStores } from './helpers/counter-stores.js';

// One suite for every counter store implementation (as kysely runs its suite per dialect).
for (const [name, make] of counterStores) {
  describe(`counter store: ${name}`, () => {
    const T = 1_000_000_000;
    let cleanup: (() => Promise<void>) | undefined;
    const open = async () => {
      const made = await make();
      cleanup = made.close;
      return made.store;
    };
    afterEach(async () => {
      await cleanup?.();
      cleanup = undefined;
    });

    it('counts up to the limit and refuses past it, naming the full counter', async () => {
      const s = await open();
      const c = { key: 'a:min', limit: 3, resetAt: T + 60_000 };
      expect(await s.hit([c], T)).toEqual({ ok: true, counts: [1] });
      expect(await s.hit([c], T)).toEqual({ ok: true, counts: [2] });
      expect(await s.hit([c], T)).toEqual({ ok: true, counts: [3] });
      expect(await s.hit([c], T)).toEqual({ ok: false, failed: 0, count: 3 });
      expect(await s.peek(['a:min', 'unknown'], T)).toEqual([3, 0]);
    });

    it('moves every counter of a hit or none (a full second counter leaves the first unchanged)', async () => {
      const s = await open();
      const minute = { key: 'm', limit: 10, resetAt: T + 60_000 };
      const day = { key: 'd', limit: 1, resetAt: T + 86_400_000 };
      expect(await s.hit([minute, day], T)).toEqual({ ok: true, counts: [1, 1] });
      expect(await s.hit([minute, day], T)).toEqual({ ok: false, failed: 1, count: 1 });
      expect(await s.peek(['m', 'd'], T)).toEqual([1, 1]);
    });

    it('admits exactly the limit under concurrency', async () => {
      const s = await open();
      const c = { key: 'burst', limit: 20, resetAt: T + 60_000 };
      const results = await Promise.all(Array.from({ length: 50 }, () => s.hit([c], T)));
      expect(results.filter((r) => r.ok)).toHaveLength(20);
      expect(await s.peek(['burst'], T)).toEqual([20]);
    });

    it('adds counts in batches whatever the limit, answering the totals; a hit sees them', async () => {
      const s = await open();
      expect(await s.add([{ key: '{x}:a', n: 3, resetAt: T + 1000 }], T)).toEqual([3]);
      expect(
        await s.add(
          [
            { key: '{x}:a', n: 4, resetAt: T + 1000 },
            { key: '{x}:b', n: 1, resetAt: T + 1000 },
          ],
          T,
        ),
      ).toEqual([7, 1]);
      expect(await s.hit([{ key: '{x}:a', limit: 7, resetAt: T + 1000 }], T)).toEqual({ ok: false, failed: 0, count: 7 });
      expect(await s.peek(['{x}:a', '{x}:b'], T)).toEqual([7, 1]);
    });

    it('keeps separate keys apart', async () => {
      const s = await open();
      await s.hit([{ key: 'x', limit: 1, resetAt: T + 1000 }], T);
      expect(await s.hit([{ key: 'y', limit: 1, resetAt: T + 1000 }], T)).toEqual({ ok: true, counts: [1] });
    });
  });
}
