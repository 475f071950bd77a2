import type { ProviderFailure } from '../provider.js';

/** The provider's own error code and message from an OpenAI-style error body, when it has them. */
export function describeUpstreamError(status: number, text: string): Pick<ProviderFailure, 'code' | 'message'> {
  let code: string | undefined;
  let message = `upstream answered HTTP ${status}`;
  try {
    const body = JSON.parse(text) as { error?: unknown };
    const err = body.error;
    if (err && typeof err === 'object') {
      const e = err as Record<string, unknown>;
      const c = e.code ?? e.type;
      if (typeof c === 'string' || typeof c === 'number') code = String(c);
      if (typeof e.message === 'string' && e.message) message = `upstream answered HTTP ${status}: ${e.message.slice(0, 300)}`;
    } else if (typeof err === 'string') {
      message = `upstream answered HTTP ${status}: ${err.slice(0, 300)}`;
    }
  } catch {
    // not JSON: keep the generic message
  }
  return code === undefined ? { message } : { code, message };
}
