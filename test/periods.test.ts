import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { keyPeriodName, periodEnd, periodKeys } from '../src/ledger/periods.js';

/** The periods as the calendar names them, computed afresh from the date (what periodKeys remembers per day). */
function reference(ms: number) {
  const d = new Date(ms);
  const ymd = (t: number) => new Date(t).toISOString().slice(0, 10);
  const day = ymd(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  const monday = ymd(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7)));
  return { all: 'all', daily: `d:${day}`, weekly: `w:${monday}`, monthly: `m:${day.slice(0, 7)}` };
}

describe('usage periods', () => {
  it('name the UTC day, the week from Monday and the calendar month of any instant, however the calls interleave', () => {
    const instant = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2100, 0, 1) });
    fc.assert(
      fc.property(fc.array(instant, { minLength: 1, maxLength: 20 }), (times) => {
        for (const t of times) expect(periodKeys(t)).toEqual(reference(t));
      }),
      { numRuns: 300 },
    );
  });

  it('change at 00:00 UTC, on Mondays for weeks and on the 1st for months', () => {
    const sunday = Date.UTC(2026, 10, 22, 23, 59, 59, 999);
    expect(periodKeys(sunday)).toEqual({ all: 'all', daily: 'd:2026-11-22', weekly: 'w:2026-11-16', monthly: 'm:2026-11' });
    expect(periodKeys(sunday + 1)).toEqual({ all: 'all', daily: 'd:2026-11-23', weekly: 'w:2026-11-23', monthly: 'm:2026-11' });
    expect(periodKeys(Date.UTC(2026, 11, 1))).toMatchObject({ weekly: 'w:2026-11-30', monthly: 'm:2026-12' });
    expect(periodEnd('daily', sunday)).toBe(sunday + 1);
    expect(periodEnd('weekly', sunday)).toBe(sunday + 1);
    expect(periodEnd('monthly', sunday)).toBe(Date.UTC(2026, 11, 1));
  });

  it('are shared and frozen: a caller cannot change what the next one gets', () => {
    const t = Date.UTC(2026, 10, 18, 10);
    expect(Object.isFrozen(periodKeys(t))).toBe(true);
    expect(periodKeys(t + 1000)).toBe(periodKeys(t));
  });

  it("name a key's usage in a period as hash, NUL, period, whatever keys and periods were asked for before (its memo drops old ones)", () => {
    const hash = fc.stringMatching(/^[0-9a-f]{1,64}$/);
    const period = fc.oneof(fc.constant('all'), fc.stringMatching(/^[dwm]:[0-9-]{1,10}$/));
    fc.assert(
      fc.property(fc.array(fc.tuple(hash, period), { minLength: 1, maxLength: 200 }), (asks) => {
        for (const [h, p] of asks) expect(keyPeriodName(h, p)).toBe(`${h}\u0000${p}`);
      }),
    );
  });
});
