import { describe, expect, it } from 'vitest';
import { GenerationIds } from '../src/chat/generation-id.js';

describe('generation ids', () => {
  it('are gen-, the Unix second, then the millisecond and a random part: unique, and later ones sort after', () => {
    const ids = new GenerationIds();
    const t0 = Date.UTC(2026, 10, 25, 12, 0, 0, 0);
    const made: Array<[number, string]> = [];
    // Several ids a millisecond, over three seconds.
    for (let ms = 0; ms < 3000; ms += 7) for (let k = 0; k < 3; k++) made.push([t0 + ms, ids.next(t0 + ms)]);
    expect(new Set(made.map(([, id]) => id)).size).toBe(made.length);
    for (const [at, id] of made) expect(id).toMatch(new RegExp(`^gen-${Math.floor(at / 1000)}-${String(at % 1000).padStart(3, '0')}[A-Za-z0-9_-]{14}$`));
    // Sorted as text (the ledger's index order), ids keep the order of the times they were made at.
    const sorted = [...made].sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0));
    for (let i = 1; i < sorted.length; i++) expect((sorted[i] as [number, string])[0]).toBeGreaterThanOrEqual((sorted[i - 1] as [number, string])[0]);
  });

  it('two generators (two processes) made at the same millisecond do not collide', () => {
    const a = new GenerationIds();
    const b = new GenerationIds();
    const at = Date.UTC(2026, 10, 25);
    const all = Array.from({ length: 5000 }, () => [a.next(at), b.next(at)]).flat();
    expect(new Set(all).size).toBe(all.length);
  });
});
