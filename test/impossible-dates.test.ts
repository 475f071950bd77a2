import { describe, expect, it } from 'vitest';
import { ReportService } from '../src/admin/report-service.js';
import { ManualClock } from '../src/clock.js';
import type { KeyRecord, SpendQuery } from '../src/ledger/ledger.js';

// CONTRACT §9 / report-schemas.ts: `date` "must be a UTC date, YYYY-MM-DD" within the last 30 days.
// Date.parse rolls a day that does not exist over (2026-11-31 is read as 2026-12-01): such a date is
// refused (400), not answered with another day's activity.
describe('GET /api/v1/activity?date= with a day that does not exist', () => {
  it('is refused, not read as another day', async () => {
    const asked: SpendQuery[] = [];
    const ledger = { spend: async (q: SpendQuery) => (asked.push(q), []) } as never;
    const reports = new ReportService(ledger, new ManualClock(Date.UTC(2026, 11, 5, 12)));
    const owner = { accountId: 'acct_1', hash: 'h', management: true } as unknown as KeyRecord;
    await expect(reports.activity(owner, { date: '2026-11-31' })).rejects.toMatchObject({ message: expect.stringMatching(/^date: /) });
    expect(asked.map((q) => new Date(q.from).toISOString())).toEqual([]);
  });
});
