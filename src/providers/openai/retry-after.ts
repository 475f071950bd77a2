type HeaderValue = string | string[] | undefined;

const first = (v: HeaderValue): string | undefined => (Array.isArray(v) ? v[0] : v);

/**
 * The wait an upstream asked for, in ms: `retry-after-ms`, or `retry-after` as seconds or an HTTP
 * date. Undefined when it gave none.
 */
export function retryAfterMs(headers: Record<string, HeaderValue>, nowMs: number): number | undefined {
  const ms = first(headers['retry-after-ms']);
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const ra = first(headers['retry-after'])?.trim();
  if (!ra) return undefined;
  if (/^\d+(\.\d+)?$/.test(ra)) return Math.ceil(Number(ra) * 1000);
  const date = Date.parse(ra);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}
