import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { SummedHistogram } from '../src/observability/summed-histogram.js';
import { parsePrometheus, type Samples } from './helpers/prometheus.js';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** Samples in one order whatever the order of their labels and lines, sums rounded to the float noise of their order. */
function canonical(samples: Samples): string[] {
  return samples
    .map((s) => {
      const labels = Object.entries(s.labels)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${k}=${v}`)
        .join(',');
      const value = s.name.endsWith('_sum') ? s.value.toPrecision(12) : String(s.value);
      return `${s.name}{${labels}} ${value}`;
    })
    .sort();
}

/** The same observations through prom-client's Histogram and through SummedHistogram, scraped. */
async function both(labelNames: string[], observations: Array<[number, string[]]>): Promise<[string[], string[]]> {
  const theirs = new Registry();
  const ours = new Registry();
  const histogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames, buckets: BUCKETS, registers: [theirs] });
  const summed = new SummedHistogram({ name: 'h_seconds', help: 'h', labelNames, buckets: BUCKETS, registry: ours });
  for (const [value, labels] of observations) {
    const byName = Object.fromEntries(labelNames.map((n, i) => [n, labels[i] as string]));
    if (labelNames.length > 0) histogram.observe(byName, value);
    else histogram.observe(value);
    summed.observe(value, ...labels);
  }
  return [canonical(parsePrometheus(await theirs.metrics())), canonical(parsePrometheus(await ours.metrics()))];
}

describe('SummedHistogram', () => {
  it('scrapes as prom-client’s own histogram does, for any observations (bounds, between, above the last)', async () => {
    const value = fc.oneof(fc.constantFrom(...BUCKETS, 0, 1000), fc.double({ min: 0, max: 400, noNaN: true }));
    const provider = fc.constantFrom('a', 'b', 'openai');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(value, provider), { maxLength: 60 }), async (obs) => {
        const [theirs, ours] = await both(
          ['provider'],
          obs.map(([v, p]) => [v, [p]]),
        );
        expect(ours).toEqual(theirs);
      }),
      { numRuns: 200 },
    );
  });

  it('without labels has its series from the start, as prom-client’s, and counts into it', async () => {
    const [emptyTheirs, emptyOurs] = await both([], []);
    expect(emptyOurs).toEqual(emptyTheirs);
    expect(emptyOurs).toContain('h_seconds_count{} 0');
    const [theirs, ours] = await both(
      [],
      [
        [0.004, []],
        [0.005, []],
        [7, []],
        [301, []],
      ],
    );
    expect(ours).toEqual(theirs);
    expect(ours).toContain('h_seconds_bucket{le=0.005} 2');
    expect(ours).toContain('h_seconds_bucket{le=+Inf} 4');
  });

  it('keeps series of several labels apart, and does not count a value that is not a finite number', async () => {
    const registry = new Registry();
    const h = new SummedHistogram({ name: 'x_seconds', help: 'x', labelNames: ['provider', 'kind'], buckets: [1, 2], registry });
    h.observe(1.5, 'a', 'k');
    h.observe(0.5, 'a', 'j');
    h.observe(Number.NaN, 'a', 'k');
    h.observe(Infinity, 'a', 'k');
    const text = await registry.metrics();
    expect(canonical(parsePrometheus(text))).toEqual(
      [
        'x_seconds_bucket{kind=j,le=1,provider=a} 1',
        'x_seconds_bucket{kind=j,le=2,provider=a} 1',
        'x_seconds_bucket{kind=j,le=+Inf,provider=a} 1',
        'x_seconds_sum{kind=j,provider=a} 0.500000000000',
        'x_seconds_count{kind=j,provider=a} 1',
        'x_seconds_bucket{kind=k,le=1,provider=a} 0',
        'x_seconds_bucket{kind=k,le=2,provider=a} 1',
        'x_seconds_bucket{kind=k,le=+Inf,provider=a} 1',
        'x_seconds_sum{kind=k,provider=a} 1.50000000000',
        'x_seconds_count{kind=k,provider=a} 1',
      ].sort(),
    );
    expect(text).toContain('# TYPE x_seconds histogram');
    registry.resetMetrics();
    expect(parsePrometheus(await registry.metrics())).toEqual([]);
  });
});
