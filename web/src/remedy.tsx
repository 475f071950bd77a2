import { ApiError } from './api.js';
import { utc } from './format.js';

const SOURCES: Record<string, string> = {
  platform_credits: 'not enough credits on the account',
  platform_key_limit: "this key's spending limit is reached",
  platform_in_flight_budget: "the account's in-flight spending budget is used up",
};

const LIMITS: Record<string, string> = {
  'free-models-per-minute': 'free-model requests per minute',
  'free-models-per-day': "today's free-model requests",
  'model-capacity': "the model's platform-wide capacity",
  ddos: 'requests per second from this address',
};

export interface Remedy {
  title: string;
  detail: string;
  hint: string | undefined;
  when: string | undefined;
}

/** What a refused call means for the person reading it: the limit it hit and the remedy the API names, never raw JSON. */
export function remedyOf(err: unknown): Remedy {
  if (!(err instanceof ApiError))
    return { title: 'Something went wrong', detail: err instanceof Error ? err.message : String(err), hint: undefined, when: undefined };
  const m = err.body?.error.metadata ?? {};
  const hint = typeof m.remedy_hint === 'string' ? m.remedy_hint : undefined;
  const message = err.body?.error.message ?? `HTTP ${err.status}`;
  if (err.status === 401) return { title: 'This credential is not valid', detail: message, hint: undefined, when: undefined };
  if (err.status === 402) {
    const source = typeof m.limit_source === 'string' ? m.limit_source : '';
    const reason = typeof m.reason === 'string' ? ` (${m.reason.replace(/_/g, ' ')})` : '';
    const retry = err.headers.retryAfter ? `try again in ${err.headers.retryAfter} s` : undefined;
    return { title: `Payment required: ${SOURCES[source] ?? (source || 'a spending limit is reached')}${reason}`, detail: message, hint, when: retry };
  }
  if (err.status === 429) {
    const limit = typeof m.limit === 'string' ? m.limit : undefined;
    const reset = err.headers.rateLimitReset
      ? `resets at ${utc(Number(err.headers.rateLimitReset))}`
      : err.headers.retryAfter
        ? `try again in ${err.headers.retryAfter} s`
        : undefined;
    const what = limit ? (LIMITS[limit] ?? limit) : typeof m.provider_name === 'string' ? `the provider ${m.provider_name}` : 'a rate limit';
    return { title: `Rate limited: ${what}`, detail: message, hint, when: reset };
  }
  return { title: `Error ${err.status}`, detail: message, hint, when: undefined };
}

export function RemedyBox({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const r = remedyOf(error);
  return (
    <div class="remedy" role="alert" data-testid="remedy">
      <strong class="remedy-title">{r.title}</strong>
      {r.hint && <p class="remedy-hint">What to do: {r.hint}</p>}
      {r.when && <p class="remedy-when">{r.when[0]?.toUpperCase() + r.when.slice(1)}.</p>}
      <p class="remedy-detail">{r.detail}</p>
    </div>
  );
}
