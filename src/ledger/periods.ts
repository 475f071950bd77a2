/** Per-key usage periods: UTC days, weeks starting Monday, calendar months (CONTRACT §7). */
export type LimitReset = 'daily' | 'weekly' | 'monthly';

export interface PeriodKeys {
  readonly all: string;
  readonly daily: string;
  readonly weekly: string;
  readonly monthly: string;
}

const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

function computePeriodKeys(day: number): PeriodKeys {
  const d = new Date(day * DAY_MS);
  const date = iso(day * DAY_MS).slice(0, 10);
  const sinceMonday = (d.getUTCDay() + 6) % 7;
  const monday = iso((day - sinceMonday) * DAY_MS).slice(0, 10);
  return Object.freeze({ all: 'all', daily: `d:${date}`, weekly: `w:${monday}`, monthly: `m:${date.slice(0, 7)}` });
}

/**
 * The period names of the UTC day of `day` (days since the epoch), kept for the last few days asked:
 * every request asks for them (admission, settlement, the ledger's commit), and they change once a day.
 * A pure function's memo, so sharing it between callers changes nothing they see.
 */
const byDay = new Map<number, PeriodKeys>();
const DAYS_KEPT = 4;

export function periodKeys(nowMs: number): PeriodKeys {
  const day = Math.floor(nowMs / DAY_MS);
  let keys = byDay.get(day);
  if (!keys) {
    if (byDay.size >= DAYS_KEPT) byDay.clear();
    keys = computePeriodKeys(day);
    byDay.set(day, keys);
  }
  return keys;
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
