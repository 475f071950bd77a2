/** Per-key usage periods: UTC days, weeks starting Monday, calendar months (CONTRACT §7). */
export type LimitReset = 'daily' | 'weekly' | 'monthly';

export interface PeriodKeys {
  all: string;
  daily: string;
  weekly: string;
  monthly: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function periodKeys(nowMs: number): PeriodKeys {
  const d = new Date(nowMs);
  const day = iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())).slice(0, 10);
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  const monday = iso(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - sinceMonday)).slice(0, 10);
  const month = day.slice(0, 7);
  return { all: 'all', daily: `d:${day}`, weekly: `w:${monday}`, monthly: `m:${month}` };
}

/** When the period that contains `nowMs` ends (the next reset), in ms. */
export function periodEnd(reset: LimitReset, nowMs: number): number {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = d.getUTCDate();
  if (reset === 'daily') return Date.UTC(y, m, day + 1);
  if (reset === 'weekly') return Date.UTC(y, m, day + (7 - ((d.getUTCDay() + 6) % 7)));
  return Date.UTC(y, m + 1, 1);
}
