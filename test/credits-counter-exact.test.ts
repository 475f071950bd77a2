import { describe, expect, it } from 'vitest';
import { PromMetrics } from '../src/observability/prom-metrics.js';
import { parsePrometheus, sample } from './helpers/prometheus.js';

// CONTRACT §3/§10: tollgate_credits_charged_total is the credits charged, summed exactly in
// nanocredits and made credits when scraped: the whole sum, rounded once at each scrape. (Each scrape
// added its interval's credits to prom-client's float total, and the counter drifted from the ledger
// by whole nanocredits over many scrapes.)
describe('tollgate_credits_charged_total stays equal to the credits charged, to the nanocredit, across scrapes', () => {
  it('1,000,000 credits charged, then 1 nanocredit charged before each of 1,000 scrapes', async () => {
    const m = new PromMetrics();
    m.charged('x/m', 'p', 1_000_000n * 1_000_000_000n, 0, 0);
    await m.registry.getSingleMetricAsString('tollgate_credits_charged_total');
    for (let i = 0; i < 1000; i++) {
      m.charged('x/m', 'p', 1n, 0, 0);
      await m.registry.getSingleMetricAsString('tollgate_credits_charged_total');
    }
    const { text } = await m.scrape();
    const value = sample(parsePrometheus(text), 'tollgate_credits_charged_total', { model: 'x/m' });
    // The ledger: 1,000,000.000001 credits. The nearest double is within 1e-10 of it.
    expect(Math.abs(value - 1_000_000.000001)).toBeLessThan(1e-9);
  });
});
