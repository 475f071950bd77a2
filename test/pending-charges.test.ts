import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PendingCharges } from '../src/limits/pending-charges.js';
import type { PendingCharge } from '../src/limits/money-view.js';

const KEYS = ['k1', 'k2'];
const DAYS = ['d:2026-11-25', 'd:2026-11-26'];
/** One periods object a day, as periodKeys answers (a charge's keys are reused from the one before it when both match). */
const PERIODS = DAYS.map((daily) => ({ daily, weekly: 'w:2026-11-23', monthly: 'm:2026-11' }));

/** What the sums must be: every pending charge still in its lease, summed the slow way. */
function naive(live: Map<string, { charge: PendingCharge; until: number }>, hash: string, period: string) {
  let usage = 0n;
  let byokUsage = 0n;
  for (const { charge } of live.values()) {
    const p = charge.periods;
    if (charge.keyHash !== hash || !(period === 'all' || p.daily === period || p.weekly === period || p.monthly === period)) continue;
    usage += charge.cost;
    byokUsage += charge.byokUsage;
  }
  return { usage, byokUsage };
}

const op = fc.oneof(
  fc.record({
    kind: fc.constant('set' as const),
    id: fc.integer({ min: 0, max: 6 }),
    key: fc.integer({ min: 0, max: 1 }),
    day: fc.integer({ min: 0, max: 1 }),
    cost: fc.bigInt({ min: 0n, max: 10n ** 12n }),
    byok: fc.bigInt({ min: 0n, max: 10n ** 9n }),
    lease: fc.integer({ min: 1, max: 50 }),
    // The day's shared periods object, or a copy of it (the same periods, another object).
    copy: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('delete' as const), id: fc.integer({ min: 0, max: 6 }) }),
  fc.record({ kind: fc.constant('extend' as const), id: fc.integer({ min: 0, max: 6 }), lease: fc.integer({ min: 1, max: 80 }) }),
  fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 40 }) }),
);

describe('PendingCharges', () => {
  it('issue 9: its sums (total cost, each key and period) are always what summing the charges still in their lease gives', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const pending = new PendingCharges();
        const model = new Map<string, { charge: PendingCharge; until: number }>();
        let now = 0;
        for (const o of ops) {
          if (o.kind === 'set') {
            const charge: PendingCharge = {
              cost: o.cost,
              byokUsage: o.byok,
              keyHash: KEYS[o.key]!,
              periods: o.copy ? { ...PERIODS[o.day]! } : PERIODS[o.day]!,
            };
            pending.set(`r${o.id}`, charge, now + o.lease);
            model.set(`r${o.id}`, { charge, until: now + o.lease });
          } else if (o.kind === 'delete') {
            expect(pending.delete(`r${o.id}`)).toBe(model.delete(`r${o.id}`));
          } else if (o.kind === 'extend') {
            pending.extend(`r${o.id}`, now + o.lease);
            const m = model.get(`r${o.id}`);
            if (m && m.until < now + o.lease) m.until = now + o.lease;
          } else {
            now += o.ms;
            const lapsed = [...model].filter(([, m]) => m.until <= now).map(([id]) => id);
            expect(pending.expire(now)).toBe(lapsed.length > 0);
            for (const id of lapsed) model.delete(id);
          }
          expect(pending.size).toBe(model.size);
          expect(pending.cost).toBe([...model.values()].reduce((s, m) => s + m.charge.cost, 0n));
          for (const hash of KEYS) {
            for (const period of ['all', ...DAYS, 'w:2026-11-23', 'm:2026-11', 'd:2026-11-27']) {
              expect(pending.keyUsage(hash, period)).toEqual(naive(model, hash, period));
            }
          }
        }
      }),
      { numRuns: 300 },
    );
  });
});
