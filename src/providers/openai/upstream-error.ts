import type { ProviderFailure } from '../provider.js';

/** Removes every secret from a text that came from an upstream (some echo the key they were sent). */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const s of secrets) if (s && s.length >= 4) out = out.split(s).join('[redacted]');
  return out;
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
      if (typeof c === 'string' || typeof c === 'number') code = redactSecrets(String(c), [sentKey]).slice(0, 100);
      if (typeof e.message === 'string' && e.message) detail = e.message;
    } else if (typeof err === 'string') {
      detail = err;
    }
  } catch {
    // not JSON: keep the generic message
  }
  let message = `upstream answered HTTP ${status}`;
  if (status === 401 || status === 403) message += ': the provider refused the credentials it was sent';
  else if (detail) message += `: ${redactSecrets(detail, [sentKey]).slice(0, 300)}`;
  return code === undefined ? { message } : { code, message };
}
