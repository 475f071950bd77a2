/** Credits as the API gives them (JSON numbers, at most 9 decimals), written without float noise. */
export function credits(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  return fromNano(toNano(n));
}

/** Exact nanocredits of an API amount. */
export function toNano(n: number): bigint {
  return BigInt(n.toFixed(9).replace('.', ''));
}

export function fromNano(nano: bigint): string {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  const frac = (abs % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${sign}${abs / 1_000_000_000n}${frac ? `.${frac}` : ''}`;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A time in UTC, to the minute: 2026-11-20 10:05 UTC. */
export function utc(ms: number | string | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return '—';
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())} UTC`;
}

/** When a key's limit next resets (periods are UTC days, weeks from Monday, calendar months). */
export function nextReset(reset: string | null, now = Date.now()): number | null {
  const d = new Date(now);
  const day = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
  if (reset === 'daily') return day + 86_400_000;
  if (reset === 'weekly') return day + ((8 - d.getUTCDay()) % 7 || 7) * 86_400_000;
  if (reset === 'monthly') return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return null;
}

/** The next 00:00 UTC (when today's free-model ceiling resets). */
export function nextUtcMidnight(now = Date.now()): number {
  return nextReset('daily', now) as number;
}

export function ms(n: number | null | undefined): string {
  return n === null || n === undefined ? '—' : `${Math.round(n)} ms`;
}

export function yesNo(b: boolean): string {
  return b ? 'yes' : 'no';
}
