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

/**
 * When a charge counts in its key's usage periods: when its request ended, as the spec charges a
 * request "when the request finishes" (its running hold counts against the period under way, which
 * is the one its charge lands in). A charge record keeps its start and latency: the end is their sum.
 */
export function chargedAt(charge: { createdAt: number; latencyMs: number }): number {
  return charge.createdAt + charge.latencyMs;
}

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

/**
 * The one string `hash\u0000period` that names a key's usage in a period, the same string object
 * each time it is asked for (kept for the last keys asked): the money view, the pending charges and
 * the SQLite commit look usage up by it on every request, and a string made anew each time costs its
 * building, its hashing and a full comparison at each lookup, where the same string is hashed once and
 * compared by identity. A pure function's memo, dropped whole past KEYS_KEPT keys.
 */
const keyPeriods = new Map<string, Map<string, string>>();
const KEYS_KEPT = 10_000;

export function keyPeriodName(hash: string, period: string): string {
  let byPeriod = keyPeriods.get(hash);
  if (!byPeriod) {
    if (keyPeriods.size >= KEYS_KEPT) keyPeriods.clear();
    keyPeriods.set(hash, (byPeriod = new Map()));
  }
  let name = byPeriod.get(period);
  if (name === undefined) {
    // A key's periods change daily: the old ones go before they pile up.
    if (byPeriod.size >= 16) byPeriod.clear();
    byPeriod.set(period, (name = `${hash}\u0000${period}`));
  }
  return name;
}
