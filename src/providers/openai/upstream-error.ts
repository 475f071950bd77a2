import type { ProviderFailure } from '../provider.js';

/** Removes every secret from a text that came from an upstream (some echo the key they were sent). */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
}

/** A lone surrogate: half of a character, which strict JSON readers refuse. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Text from an upstream as the gateway passes it on: scrubbed of the key it was sent, at most `max`
 * characters, and well-formed (a cut inside a character, or half of one the upstream sent, is U+FFFD).
 */
export function upstreamText(text: string, sentKey: string | undefined, max: number): string {
  return redactSecrets(text, [sentKey]).slice(0, max).replace(LONE_SURROGATE, '\ufffd');
}

/**
 * The provider's own error code and a message from an OpenAI-style error body. Upstream text is cut
 * short and scrubbed of the key that was sent; an authentication failure says only that, since its
 * text is where providers echo keys.
 */
export function describeUpstreamError(status: number, text: string, sentKey: string | undefined): Pick<ProviderFailure, 'code' | 'message'> {
  let code: string | undefined;
  let detail: string | undefined;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    const err = body.error;
    if (err && typeof err === 'object') {
      const e = err as Record<string, unknown>;
      const c = e.code ?? e.type;
      if (typeof c === 'string' || typeof c === 'number') code = upstreamText(String(c), sentKey, 100);
      if (typeof e.message === 'string' && e.message) detail = e.message;
    } else if (typeof err === 'string') {
      detail = err;
    }
  } catch {
    // not JSON: keep the generic message
  }
  let message = `upstream answered HTTP ${status}`;
  if (status === 401 || status === 403) message += ': the provider refused the credentials it was sent';
  else if (detail) message += `: ${upstreamText(detail, sentKey, 300)}`;
  return code === undefined ? { message } : { code, message };
}

/** What providers call being overloaded: Anthropic's `overloaded_error`, "at capacity", "currently overloaded". */
const AT_CAPACITY = /overload|capacity/i;

/**
 * Whether an upstream's error says it is rate limiting or at capacity (spec, 429 origin B): a 429; a
 * 529 (overloaded); a 503 that gives a retry hint or names itself overloaded or at capacity. Any other
 * error status is a failure of its own (502 once fallback is exhausted).
 */
export function rateLimitedOrAtCapacity(status: number, failure: Pick<ProviderFailure, 'code' | 'message'>, hasRetryHint: boolean): boolean {
  if (status === 429 || status === 529) return true;
  if (status !== 503) return false;
  return hasRetryHint || AT_CAPACITY.test(failure.code ?? '') || AT_CAPACITY.test(failure.message);
}

/** Whether an `error` object an upstream sent (in a chunk mid-stream, or in a 200 answer) says it is rate limiting or at capacity. */
export function rateLimitedErrorObject(code: unknown, type: unknown): boolean {
  if (code === 429 || code === '429' || code === 529 || code === '529' || code === 'rate_limit_exceeded' || type === 'rate_limit_error') return true;
  return (typeof code === 'string' && AT_CAPACITY.test(code)) || (typeof type === 'string' && AT_CAPACITY.test(type));
}
