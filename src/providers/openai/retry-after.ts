type HeaderValue = string | string[] | undefined;

const first = (v: HeaderValue): string | undefined => (Array.isArray(v) ? v[0] : v);

/** A non-negative decimal, with an exponent if it likes ("1.5", "1e3"). */
const NUMBER = /^\d+(\.\d+)?(e[+-]?\d+)?$/i;

/** Finite: a value too large for a double (a 400-digit number, "1e400") counts as the largest finite one. */
const finite = (n: number): number => (Number.isFinite(n) ? n : Number.MAX_VALUE);

/**
 * The wait an upstream asked for, in ms: `retry-after-ms`, or `retry-after` as seconds or an HTTP
 * date. Undefined when it gave none. Always finite and non-negative; routing caps it (Cooldowns.bound).
 */
export function retryAfterMs(headers: Record<string, HeaderValue>, nowMs: number): number | undefined {
  const ms = first(headers['retry-after-ms'])?.trim();
  if (ms !== undefined && NUMBER.test(ms)) return finite(Math.ceil(Number(ms)));
  const ra = first(headers['retry-after'])?.trim();
  if (!ra) return undefined;
  if (NUMBER.test(ra)) return finite(Math.ceil(Number(ra) * 1000));
  const date = Date.parse(ra);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
