import { GatewayError } from '../errors.js';

export type PlatformLimit = 'free-models-per-minute' | 'free-models-per-day' | 'model-capacity' | 'ddos';

/**
 * A 429 from the platform's own limits (spec, Errors / 429, origin A): X-RateLimit-Limit, -Remaining and
 * -Reset (Unix ms) describe the limit hit; `metadata.limit` names it; the hint says whether waiting helps.
 */
export function platformRateLimited(a: { limit: PlatformLimit; max: number; resetAt: number; now: number; message: string; hint: string }): GatewayError {
  const headers: Record<string, string> = {
    'x-ratelimit-limit': String(a.max),
    'x-ratelimit-remaining': '0',
    'x-ratelimit-reset': String(a.resetAt),
  };
  // Short windows: a retry after the reset will pass. The daily cap is not a transient error.
  if (a.limit !== 'free-models-per-day') headers['retry-after'] = String(Math.max(1, Math.ceil((a.resetAt - a.now) / 1000)));
  return new GatewayError('rate_limited', a.message, { metadata: { limit: a.limit, remedy_hint: a.hint }, headers });
}
