import { hash } from 'node:crypto';
import type { Clock } from '../clock.js';

/**
 * The endpoint-and-credential a cooldown applies to: provider, upstream model and a hash of the key
 * the call was sent with (never the key itself). One account's exhausted BYOK key cools down only
 * that key; the platform key is one more credential.
 */
export function cooldownKey(provider: string, upstreamModel: string, apiKey: string | undefined): string {
  return `${provider}\u0000${upstreamModel}\u0000${apiKey === undefined ? 'none' : credentialHash(apiKey)}`;
}

/** Credential hashes by key, kept for the keys in use (the configured ones, and BYOK keys while used). */
const credentialHashes = new Map<string, string>();
const MAX_CREDENTIAL_HASHES = 1000;

/** The hash a cooldown names a credential by, worked out once a key (every call would otherwise hash it). */
function credentialHash(apiKey: string): string {
  let h = credentialHashes.get(apiKey);
  if (h === undefined) {
    h = hash('sha256', apiKey, 'base64url').slice(0, 22);
    if (credentialHashes.size >= MAX_CREDENTIAL_HASHES) credentialHashes.clear();
    credentialHashes.set(apiKey, h);
  }
  return h;
}

/** A cooldown that started (none was running for its endpoint and credential): for alerts. */
export interface CooldownStart {
  provider: string;
  model: string;
  /** The hash of the credential in the cooldown key (never the key). */
  credential: string;
  untilMs: number;
  code: string | undefined;
}

/** The longest retry hint passed on to a client: past it, an upstream's hint is taken as this. */
export const MAX_RETRY_HINT_MS = 86_400_000;

/**
 * An upstream's retry hint as the gateway passes it on (CONTRACT §6: Retry-After is the smallest hint
 * the providers gave): finite, non-negative and at most a day (an absurd `retry-after-ms`, such as
 * 1e400, is not sent on as it came).
 */
export function retryHint(retryAfterMs: number): number {
  if (Number.isNaN(retryAfterMs) || retryAfterMs <= 0) return 0;
  return Math.min(Math.ceil(retryAfterMs), MAX_RETRY_HINT_MS);
}

/**
 * Endpoints that answered 429 with a retry hint are skipped, for that credential, for as long as they
 * asked, but never longer than `maxMs` (spec, 429 origin B: fallback routing first retries other
 * providers for the same model). An upstream's hint is not trusted without bound for the cooldown;
 * what it asked for is still what a skipped endpoint's hint says.
 */
export class Cooldowns {
  private readonly until = new Map<string, { until: number; askedUntil: number; code: string | undefined }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxMs: number,
    /** Told of each cooldown that starts (not of one that is only extended); must not throw or block. */
    private readonly onStart?: (start: CooldownStart) => void,
  ) {}

  /**
   * When the endpoint may be tried again, if it is cooling down now (`remainingMs`), and how long its
   * upstream asked to wait from now (`retryAfterMs`, at least the cooldown).
   */
  cooling(key: string): { remainingMs: number; retryAfterMs: number; code: string | undefined } | undefined {
    // Nearly always none: then the key, built for this request, is not hashed for a lookup.
    if (this.until.size === 0) return undefined;
    const entry = this.until.get(key);
    if (!entry) return undefined;
    const remainingMs = entry.until - this.clock.now();
    if (remainingMs <= 0) {
      this.until.delete(key);
      return undefined;
    }
    // What its upstream asked for never ends before the cooldown (the cooldown is that, capped).
    return { remainingMs, retryAfterMs: entry.askedUntil - this.clock.now(), code: entry.code };
  }

  /** The endpoints cooling down now (provider and upstream model; the credential stays a hash, left out), soonest end first. */
  active(): Array<{ provider: string; model: string; remainingMs: number; code: string | undefined }> {
    const now = this.clock.now();
    const list = [];
    for (const [key, entry] of this.until) {
      if (entry.until <= now) {
        this.until.delete(key);
        continue;
      }
      const [provider = '', model = ''] = key.split('\u0000');
      list.push({ provider, model, remainingMs: entry.until - now, code: entry.code });
    }
    return list.sort((a, b) => a.remainingMs - b.remainingMs);
  }

  /** The endpoint answered 429 asking to wait `retryAfterMs`: it cools down that long, at most `maxMs`. */
  note(key: string, retryAfterMs: number, code: string | undefined): void {
    const asked = retryHint(retryAfterMs);
    const wait = Math.min(asked, this.maxMs);
    if (wait <= 0) return;
    const now = this.clock.now();
    const until = now + wait;
    const current = this.until.get(key);
    const askedUntil = Math.max(now + asked, current?.askedUntil ?? 0);
    if (!current || current.until < until) this.until.set(key, { until, askedUntil, code });
    else current.askedUntil = askedUntil;
    if (this.onStart && (!current || current.until <= this.clock.now())) {
      const [provider = '', model = '', credential = ''] = key.split('\u0000');
      this.onStart({ provider, model, credential, untilMs: until, code });
    }
  }
}
