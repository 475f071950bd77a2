/**
 * Every error the gateway answers with, in one registry: a stable code, an HTTP status and whether a
 * retry can help. Expected outcomes (a limit reached, credits short) and infrastructure failures
 * (a store down) are distinct codes. `http/error-handler.ts` is the one place they become HTTP.
 */
export const errorCodes = {
  invalid_request: { status: 400, retryable: false },
  invalid_json: { status: 400, retryable: false },
  unknown_model: { status: 400, retryable: false },
  unauthorized: { status: 401, retryable: false },
  admin_unauthorized: { status: 401, retryable: false },
  insufficient_credits: { status: 402, retryable: false },
  key_limit_reached: { status: 402, retryable: false },
  in_flight_budget_exhausted: { status: 402, retryable: true },
  weight_exceeds_budget: { status: 402, retryable: false },
  not_found: { status: 404, retryable: false },
  payload_too_large: { status: 413, retryable: false },
  unsupported_media_type: { status: 415, retryable: false },
  rate_limited: { status: 429, retryable: true },
  upstream_rate_limited: { status: 429, retryable: true },
  upstream_failed: { status: 502, retryable: true },
  // Every provider refused the request itself (CONTRACT §10): its status, passed on.
  upstream_bad_request: { status: 400, retryable: false },
  upstream_payload_too_large: { status: 413, retryable: false },
  upstream_unprocessable: { status: 422, retryable: false },
  /** A store the gateway needs does not answer (`metadata.reason` says which). */
  unavailable: { status: 503, retryable: true },
  internal: { status: 500, retryable: true },
} as const satisfies Record<string, { status: number; retryable: boolean }>;

export type ErrorCode = keyof typeof errorCodes;

export interface GatewayErrorOptions {
  metadata?: Record<string, unknown>;
  headers?: Record<string, string>;
  cause?: unknown;
  /** Details for the request's log line only, never sent (the providers tried and how each failed). */
  logged?: Record<string, unknown>;
}

export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  readonly status: number;
  readonly retryable: boolean;
  readonly metadata: Record<string, unknown> | undefined;
  readonly headers: Record<string, string>;
  logged: Record<string, unknown> | undefined;

  constructor(
    readonly code: ErrorCode,
    message: string,
    options: GatewayErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = errorCodes[code].status;
    this.retryable = errorCodes[code].retryable;
    this.metadata = options.metadata;
    this.headers = options.headers ?? {};
    this.logged = options.logged;
  }
}

export function isGatewayError(err: unknown): err is GatewayError {
  return err instanceof GatewayError;
}

export const invalidRequest = (message: string, metadata?: Record<string, unknown>) =>
  new GatewayError('invalid_request', message, metadata ? { metadata } : {});
export const notFound = (message: string) => new GatewayError('not_found', message);
