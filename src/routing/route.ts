import { GatewayError } from '../errors.js';
import type { Metrics } from '../observability/metrics.js';
import { ProviderError, type ChatAnswer, type ProviderAdapter, type ProviderFailure, type StreamBatch, type UpstreamBody } from '../providers/provider.js';
import { cooldownKey, retryHint, type Cooldowns } from './cooldowns.js';
import type { Attempt } from './plan.js';
import { cancelMessage, type CancelSignal } from '../cancellation.js';

export interface AttemptFailure {
  attempt: Attempt;
  failure: ProviderFailure;
  /** Counted as a fallback (the request moved on to another attempt). */
  counted?: boolean;
}

export interface Routed {
  attempt: Attempt;
  answer: ChatAnswer;
  isByok: boolean;
  failures: AttemptFailure[];
  /** When the attempt that answered was sent (the clock's milliseconds). */
  sentAt: number;
}

export interface RouteInput {
  attempts: Attempt[];
  /** The client's body, without the gateway's own fields. */
  body: UpstreamBody;
  stream: boolean;
  providers: ReadonlyMap<string, ProviderAdapter>;
  /** The account's own key for a provider, when it stored one. */
  byokKey(provider: string): string | undefined;
  /** The provider's configured key. */
  platformKey(provider: string): string | undefined;
  signal: CancelSignal;
  cooldowns: Cooldowns;
  /** Runs before an attempt is sent; a GatewayError it throws (a platform limit) skips the attempt. */
  beforeAttempt?: (attempt: Attempt) => Promise<void>;
  metrics: Metrics;
  now(): number;
}

/**
 * Reads a stream up to its first event with output, so that a stream failing before any output
 * (after, say, a role-only first chunk) still falls back to the next endpoint. The batches read are
 * replayed in front of the rest.
 */
async function primeStream(events: AsyncIterable<StreamBatch>): Promise<AsyncIterable<StreamBatch>> {
  const it = events[Symbol.asyncIterator]();
  const buffered: StreamBatch[] = [];
  for (;;) {
    const r = await it.next();
    if (r.done) throw new ProviderError({ kind: 'invalid_response', message: 'upstream stream ended before any output' });
    buffered.push(r.value);
    if (r.value.events.some((e) => e.output)) break;
  }
  return {
    [Symbol.asyncIterator]() {
      return {
        next: () => {
          const head = buffered.shift();
          return head ? Promise.resolve({ done: false as const, value: head }) : it.next();
        },
        return: (value?: unknown) => it.return?.(value) ?? Promise.resolve({ done: true as const, value: undefined }),
      };
    },
  };
}

/**
 * Tries the attempts in order until one answers. A failure before any output reaches the client
 * moves on to the next attempt; when all fail, the error says why (429 when any upstream rate
 * limited the request; the providers' 400, 413 or 422 when every one refused the request itself;
 * 502 otherwise).
 */
export async function route(input: RouteInput): Promise<Routed> {
  const failures: AttemptFailure[] = [];
  const refusals: GatewayError[] = [];
  for (const attempt of input.attempts) {
    if (input.signal.aborted) break;
    const provider = input.providers.get(attempt.endpoint.provider);
    if (!provider) continue;
    if (input.beforeAttempt) {
      try {
        await input.beforeAttempt(attempt);
      } catch (err) {
        if (!(err instanceof GatewayError)) throw err;
        refusals.push(err);
        continue;
      }
    }
    const byok = input.byokKey(attempt.endpoint.provider);
    const apiKey = byok ?? input.platformKey(attempt.endpoint.provider);
    // Cooldowns are per credential: one account's exhausted key must not stop the others.
    const endpointKey = cooldownKey(attempt.endpoint.provider, attempt.endpoint.upstreamModel, apiKey);
    const cooling = input.cooldowns.cooling(endpointKey);
    if (cooling) {
      failures.push({
        attempt,
        failure: {
          kind: 'rate_limited',
          message: 'skipped: it asked to wait after rate limiting a request',
          retryAfterMs: cooling.retryAfterMs,
          ...(cooling.code === undefined ? {} : { code: cooling.code }),
        },
      });
      continue;
    }
    // The attempts before this one failed (or were skipped): the request falls back from each of them.
    for (const failed of failures) {
      if (failed.counted) continue;
      failed.counted = true;
      input.metrics.fallback(failed.attempt.endpoint.provider, failed.failure.kind);
    }
    const sentAt = input.now();
    try {
      const answer = await provider.chat({
        model: attempt.endpoint.upstreamModel,
        body: input.body,
        stream: input.stream,
        apiKey,
        signal: input.signal,
      });
      if (answer.kind === 'stream') {
        const events = await primeStream(answer.events);
        input.metrics.timeToFirstToken(attempt.endpoint.provider, (input.now() - sentAt) / 1000);
        return { attempt, answer: { kind: 'stream', events }, isByok: byok !== undefined, failures, sentAt };
      }
      input.metrics.upstreamDuration(attempt.endpoint.provider, (input.now() - sentAt) / 1000);
      return { attempt, answer, isByok: byok !== undefined, failures, sentAt };
    } catch (err) {
      if (!(err instanceof ProviderError)) throw err;
      // An upstream's retry hint is made finite (at most a day) before anything uses it: the Retry-After
      // sent is the hint, the cooldown is the hint capped at routing.max_cooldown_ms.
      const hint = err.failure.retryAfterMs;
      const failure = hint === undefined ? err.failure : { ...err.failure, retryAfterMs: retryHint(hint) };
      failures.push({ attempt, failure });
      input.metrics.upstreamFailure(attempt.endpoint.provider, failure.kind);
      if (failure.kind === 'rate_limited' && failure.retryAfterMs !== undefined) {
        input.cooldowns.note(endpointKey, failure.retryAfterMs, failure.code);
      }
    }
  }
  const err = exhausted(failures, refusals, input.signal);
  err.logged = { ...err.logged, providers: triedProviders(failures) };
  throw err;
}

/** The attempts that failed, for the request's log line: provider, model and what happened. */
export function triedProviders(failures: readonly AttemptFailure[]): Array<Record<string, unknown>> {
  return failures.map(({ attempt, failure }) => ({
    provider: attempt.endpoint.provider,
    model: attempt.model.id,
    outcome: failure.kind,
    ...(failure.status === undefined ? {} : { status: failure.status }),
    message: failure.message,
  }));
}

function exhausted(failures: AttemptFailure[], refusals: GatewayError[], signal: CancelSignal): GatewayError {
  if (signal.aborted) return new GatewayError('upstream_failed', cancelMessage(signal.reason));
  // A platform limit kept the request from a model that might have served it: that limit answers.
  const refusal = refusals[0];
  if (refusal && !failures.some((f) => f.failure.kind === 'rate_limited')) return refusal;
  const last = failures[failures.length - 1];
  const providerName = last?.attempt.endpoint.provider;
  const limited = failures.filter((f) => f.failure.kind === 'rate_limited');
  if (limited.length > 0) {
    const first = limited[0] as AttemptFailure;
    const metadata: Record<string, unknown> = {
      provider_name: first.attempt.endpoint.provider,
      raw: first.failure.message,
    };
    if (first.failure.code !== undefined) metadata.provider_code = first.failure.code;
    const headers: Record<string, string> = {};
    const hints = failures.map((f) => f.failure.retryAfterMs);
    if (hints.every((h) => h !== undefined)) {
      headers['retry-after'] = String(Math.max(1, Math.ceil(Math.min(...(hints as number[])) / 1000)));
    }
    return new GatewayError(
      'upstream_rate_limited',
      `every provider for this request is rate limited or at capacity (${first.attempt.endpoint.provider}: ${first.failure.message}); retry with backoff`,
      {
        metadata,
        headers,
      },
    );
  }
  const metadata: Record<string, unknown> = {
    provider_name: providerName ?? null,
    attempts: failures.map((f) => ({
      provider: f.attempt.endpoint.provider,
      model: f.attempt.model.id,
      reason: f.failure.message,
      ...(f.failure.status ? { status: f.failure.status } : {}),
    })),
  };
  const refused = refusedByEveryProvider(failures);
  if (refused) {
    const { attempt, failure } = refused;
    const code = REQUEST_REFUSALS[failure.status as RefusalStatus];
    if (failure.code !== undefined) metadata.provider_code = failure.code;
    return new GatewayError(code, `the provider refused the request (${attempt.endpoint.provider}: ${failure.message})`, {
      metadata: { ...metadata, provider_name: attempt.endpoint.provider },
    });
  }
  const detail = last ? `${last.attempt.endpoint.provider}: ${last.failure.message}` : 'no provider is available';
  return new GatewayError('upstream_failed', `every provider failed for this request (${detail})`, { metadata });
}

/** An upstream status that means the request itself was refused, and the code that passes it on. */
const REQUEST_REFUSALS = { 400: 'upstream_bad_request', 413: 'upstream_payload_too_large', 422: 'upstream_unprocessable' } as const;
type RefusalStatus = keyof typeof REQUEST_REFUSALS;

/**
 * The first failure, when every provider tried refused the request itself (400, 413 or 422): the
 * request is wrong, and the client is told so. When they disagree (one refused it, another failed
 * otherwise: a 5xx, a timeout, a 401/403, which is the gateway's credentials) the request may well be
 * fine, and it is the gateway's failure (undefined: 502). Different refusal statuses: the first
 * provider's answers.
 */
function refusedByEveryProvider(failures: AttemptFailure[]): AttemptFailure | undefined {
  const isRefusal = (f: AttemptFailure) => f.failure.kind === 'http' && f.failure.status !== undefined && f.failure.status in REQUEST_REFUSALS;
  return failures.length > 0 && failures.every(isRefusal) ? failures[0] : undefined;
}
