import { withoutOwnSecrets } from '../../security/api-key.js';
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
 * Text from an upstream as the gateway passes it on: scrubbed of the key it was sent and of the
 * gateway's own secrets (a client's API key, echoed from its request), at most `max` characters, and
 * well-formed (a cut inside a character, or half of one the upstream sent, is U+FFFD).
 */
export function upstreamText(text: string, sentKey: string | undefined, max: number): string {
  return withoutOwnSecrets(redactSecrets(text, [sentKey]))
    .slice(0, max)
    .replace(LONE_SURROGATE, '\ufffd');
}

/** The code and message an error body holds: `{code?, type?, message?}`. */
function codeAndMessage(e: Record<string, unknown>): { code: unknown; detail: string | undefined } {
  return { code: e.code ?? e.type, detail: typeof e.message === 'string' && e.message ? e.message : undefined };
}

/**
 * FastAPI's (and so many a self-hosted server's) `detail`: a text, or a list of `{loc, msg}`, each
 * named by where it is (`body.messages.0.content: field required`).
 */
function fastApiDetail(detail: unknown): string | undefined {
  if (typeof detail === 'string') return detail || undefined;
  if (!Array.isArray(detail)) return undefined;
  const items = detail
    .filter((d): d is Record<string, unknown> => d !== null && typeof d === 'object' && typeof (d as { msg?: unknown }).msg === 'string')
    .map((d) => (Array.isArray(d.loc) ? `${d.loc.join('.')}: ${String(d.msg)}` : String(d.msg)));
  return items.length > 0 ? items.join('; ') : undefined;
}

/** The code and message of an upstream's error body, in the shapes providers use. */
function errorBodyParts(text: string): { code: unknown; detail: string | undefined } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { code: undefined, detail: undefined }; // not JSON: the generic message
  }
  if (body === null || typeof body !== 'object') return { code: undefined, detail: undefined };
  const b = body as Record<string, unknown>;
  // OpenAI and most: {error: {message, code, type}}; some: {error: "text"}.
  if (b.error !== null && typeof b.error === 'object') return codeAndMessage(b.error as Record<string, unknown>);
  if (typeof b.error === 'string' && b.error) return { code: undefined, detail: b.error };
  // Mistral and vLLM: {object: "error", message, type, code}.
  if (typeof b.message === 'string') return codeAndMessage(b);
  return { code: undefined, detail: fastApiDetail(b.detail) };
}

/**
 * The provider's own error code and a message from its error body (OpenAI's shape, Mistral's and
 * vLLM's, FastAPI's). Upstream text is cut short and scrubbed of the key that was sent; an
 * authentication failure says only that, since its text is where providers echo keys.
 */
export function describeUpstreamError(status: number, text: string, sentKey: string | undefined): Pick<ProviderFailure, 'code' | 'message'> {
  const parts = errorBodyParts(text);
  const c = parts.code;
  const code = typeof c === 'string' || typeof c === 'number' ? upstreamText(String(c), sentKey, 100) : undefined;
  const detail = parts.detail;
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
