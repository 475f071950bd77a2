import type { Clock } from '../clock.js';

/**
 * Endpoints that answered 429 with a retry hint are skipped for as long as they asked (spec, 429
 * origin B: fallback routing first retries other providers for the same model).
 */
export class Cooldowns {
  private readonly until = new Map<string, { until: number; code: string | undefined }>();

  constructor(private readonly clock: Clock) {}

  /** When the endpoint may be tried again, if it is cooling down now. */
  cooling(key: string): { remainingMs: number; code: string | undefined } | undefined {
    const entry = this.until.get(key);
    if (!entry) return undefined;
    const remainingMs = entry.until - this.clock.now();
    if (remainingMs <= 0) {
      this.until.delete(key);
      return undefined;
    }
    return { remainingMs, code: entry.code };
  }

  note(key: string, retryAfterMs: number, code: string | undefined): void {
    if (retryAfterMs <= 0) return;
    const until = this.clock.now() + retryAfterMs;
    const current = this.until.get(key);
    if (!current || current.until < until) this.until.set(key, { until, code });
  }
}
