import { loadSession } from './session.js';

/** The error body every Tollgate error has (CONTRACT §6). */
export interface ErrorBody {
  error: { code: number; message: string; metadata?: Record<string, unknown> };
}

/** A refused or failed call, with what the answer said and the headers a remedy needs. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | undefined,
    readonly headers: { retryAfter: string | null; rateLimitReset: string | null },
  ) {
    super(body?.error.message ?? `HTTP ${status}`);
  }
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  body?: unknown;
  /** A credential other than the session's (sign-in tries one before it is kept). */
  credential?: string;
}

/**
 * An amount as the person typed it, sent as a JSON number with every digit (JSON.rawJSON, where the
 * browser has it: the gateway stores 123456789.123456789 as written), else as the nearest double. Text
 * that is not a plain decimal ("10,5", "$5", "5 credits") goes as the text, for the gateway to refuse
 * with its message: never as a number it does not mean, and never as NaN, which JSON writes as null
 * (for a key's limit, "no limit").
 */
export function decimal(text: string): unknown {
  const t = text.trim();
  if (!/^-?\d+(\.\d+)?$/.test(t)) return t;
  const rawJSON = (JSON as { rawJSON?: (text: string) => unknown }).rawJSON;
  return rawJSON ? rawJSON(t) : Number(t);
}

/** Calls the gateway's own API (same origin) with the session's credential in the Authorization header. */
export async function api<T>(path: string, options: CallOptions = {}): Promise<T> {
  const credential = options.credential ?? loadSession()?.credential ?? '';
  const headers: Record<string, string> = { authorization: `Bearer ${credential}` };
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? null : JSON.stringify(options.body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const body = json && typeof json === 'object' && 'error' in json ? (json as ErrorBody) : undefined;
    throw new ApiError(res.status, body, { retryAfter: res.headers.get('retry-after'), rateLimitReset: res.headers.get('x-ratelimit-reset') });
  }
  return json as T;
}

/** A query string from the defined values. */
export function qs(params: Record<string, string | number | boolean | undefined>): string {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : '';
}
