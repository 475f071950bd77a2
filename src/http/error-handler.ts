import type { FastifyError, FastifyInstance } from 'fastify';
import type { ErrorBody, ErrorMetadata } from '../error-body.js';
import { type GatewayError, isGatewayError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';

export interface HttpError {
  status: number;
  headers: Record<string, string>;
  body: ErrorBody;
}

/** What a request body that cannot be taken is answered with, whichever code read it (request-body.ts, or Fastify's). */
export const BODY_MESSAGES = {
  tooLarge: 'request body is larger than the limit (listen.body_limit_mb)',
  mediaType: 'unsupported Content-Type: send the body as application/json',
  empty: 'the request body is empty: send a JSON object',
  malformed: 'malformed JSON in the request body',
  length: 'Content-Length does not match the body',
} as const;

const FRAMEWORK_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: BODY_MESSAGES.tooLarge,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: BODY_MESSAGES.mediaType,
  FST_ERR_CTP_EMPTY_JSON_BODY: BODY_MESSAGES.empty,
  FST_ERR_CTP_INVALID_JSON_BODY: BODY_MESSAGES.malformed,
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: BODY_MESSAGES.length,
};

/** The one place an error becomes an HTTP answer. Never a stack trace; 5xx details go to the log. */
export function toHttpError(err: unknown, log?: Logger, reqId?: string): HttpError {
  if (isGatewayError(err)) return fromGateway(err, log, reqId);
  const fe = err as Partial<FastifyError> & { status?: number; type?: string };
  const status = fe.statusCode ?? fe.status;
  if (fe.code && FRAMEWORK_MESSAGES[fe.code]) {
    return { status: status ?? 400, headers: {}, body: { error: { code: status ?? 400, message: FRAMEWORK_MESSAGES[fe.code] as string } } };
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    const message = typeof fe.message === 'string' && fe.message ? fe.message.replace(/^FST_\w+:\s*/, '') : 'bad request';
    return { status, headers: {}, body: { error: { code: status, message } } };
  }
  log?.error({ err, reqId }, 'unexpected error');
  return { status: 500, headers: {}, body: { error: { code: 500, message: 'internal error; the details are in the gateway log' } } };
}

function fromGateway(err: GatewayError, log?: Logger, reqId?: string): HttpError {
  if (err.status >= 500 && err.code === 'internal') log?.error({ err, reqId }, err.message);
  const error: ErrorBody['error'] = { code: err.status, message: err.message };
  // An error's metadata is open (errorMetadataSchema): the fields it names are the ones errors set.
  if (err.metadata) error.metadata = err.metadata as ErrorMetadata;
  return { status: err.status, headers: err.headers, body: { error } };
}

/**
 * The answer to a request Node's HTTP parser refused before any route could see it (the connection is
 * closed after it): a request timed out (408), headers over the parser's limit (431), anything else
 * malformed (400).
 */
export function clientErrorAnswer(code: string | undefined): HttpError {
  const [status, message] =
    code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'the request was not received in time (its headers or body came too slowly)']
      : code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'the request headers are larger than the limit (16 KB in all)']
        : [400, 'malformed HTTP request'];
  return { status, headers: {}, body: { error: { code: status, message } } };
}

/**
 * What the log line of a refused or failed request says about why (CONTRACT §10): the error's code,
 * its limit_source or limit, and the providers tried.
 */
export function whyFailed(err: unknown): Record<string, unknown> {
  if (!isGatewayError(err)) return { error: 'internal' };
  const m = err.metadata ?? {};
  const fields: Record<string, unknown> = { error: err.code };
  for (const name of ['limit_source', 'limit', 'reason', 'provider_code'] as const) if (m[name] !== undefined) fields[name] = m[name];
  if (err.logged) Object.assign(fields, err.logged);
  return fields;
}

/** A 402, or a 429 from the platform's own limits (an upstream's 429 carries no `limit`). */
function countRefusal(e: HttpError, metrics: Metrics): void {
  const metadata = e.body.error.metadata;
  if (e.status === 402) metrics.refusal(402, String(metadata?.limit_source ?? ''), String(metadata?.reason ?? ''));
  else if (e.status === 429 && typeof metadata?.limit === 'string') metrics.refusal(429, '', metadata.limit);
}

/**
 * The answer to a request that failed with `err`, counted in the metrics when it is a refusal, and its
 * log fields with why (whatever refused it: a hook, as the DDoS guard, or a route).
 */
export function errorAnswer(
  err: unknown,
  log: Logger,
  metrics: Metrics,
  reqId: string,
  logFields: Record<string, unknown> | undefined,
): { answer: HttpError; logFields: Record<string, unknown> | undefined } {
  const answer = toHttpError(err, log, reqId);
  countRefusal(answer, metrics);
  return { answer, logFields: isGatewayError(err) ? { ...logFields, ...whyFailed(err) } : logFields };
}

export function registerErrorHandling(app: FastifyInstance, log: Logger, metrics: Metrics): void {
  app.setErrorHandler((err, req, reply) => {
    const { answer: e, logFields } = errorAnswer(err, log, metrics, req.id, req.logFields);
    req.logFields = logFields;
    void reply.code(e.status).headers(e.headers).send(e.body);
  });
  app.setNotFoundHandler((req, reply) => {
    const body: ErrorBody = { error: { code: 404, message: `no route for ${req.method} ${req.url.split('?')[0]}` } };
    void reply.code(404).send(body);
  });
}
