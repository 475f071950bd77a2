import fc from 'fast-check';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SummedCounter } from '../src/observability/summed-counter.js';
import { parsePrometheus } from './helpers/prometheus.js';

/** Each series' value by its labels, whatever the order of the lines. */
async function scraped(registry: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const s of parsePrometheus(await registry.metrics())) out[JSON.stringify([s.name, s.labels])] = s.value;
  return out;
}

describe('SummedCounter', () => {
  it('scrapes as prom-client’s own counter does, series kept apart by every label value (empty ones, separators)', async () => {
    // Label values that a key joined with a separator would run together: "a\u0000" + "b" and "a" + "\u0000b".
    const value = fc.constantFrom('', 'a', 'b', 'a\u0000', '\u0000b', 'model/x');
    const adds = fc.array(fc.tuple(fc.integer({ min: 1, max: 1000 }), value, value, value), { maxLength: 60 });
    await fc.assert(
      fc.asyncProperty(adds, async (list) => {
        const theirs = new Registry();
        const ours = new Registry();
        const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['x', 'y', 'z'], registers: [theirs] });
        const summed = new SummedCounter<number>({ name: 'c_total', help: 'c', labelNames: ['x', 'y', 'z'], registry: ours }, 0, (n) => n);
        for (const [by, x, y, z] of list) {
          counter.labels(x, y, z).inc(by);
          summed.add(by, x, y, z);
        }
        expect(await scraped(ours)).toEqual(await scraped(theirs));
      }),
      { numRuns: 200 },
    );
  });

  it('sums exact amounts and hands each scrape only what was added since the last', async () => {
    const registry = new Registry();
    const summed = new SummedCounter<bigint>({ name: 'n_total', help: 'n', labelNames: ['m'], registry }, 0n, (n) => Number(n));
    summed.add(3n, 'a');
    summed.add(4n, 'a');
    summed.add(5n, 'b');
    expect(await scraped(registry)).toEqual({ '["n_total",{"m":"a"}]': 7, '["n_total",{"m":"b"}]': 5 });
    summed.add(1n, 'a');
    expect(await scraped(registry)).toEqual({ '["n_total",{"m":"a"}]': 8, '["n_total",{"m":"b"}]': 5 });
  });
});
