import { GatewayError } from '../errors.js';

/** Whole seconds a client is told to wait when the limits store does not answer. */
const RETRY_AFTER_S = 2;

/**
 * The limits store (Redis) did not answer in time: fail closed (CONTRACT §8). No request that needs a
 * hold or a rate counter is admitted unchecked; the client is told to retry shortly.
 */
export function limitsUnavailable(cause: unknown): GatewayError {
  return new GatewayError('unavailable', 'the limits store (Redis) does not answer, so no request can be admitted; retry shortly', {
    metadata: { reason: 'limits_unavailable' },
    headers: { 'retry-after': String(RETRY_AFTER_S) },
    cause,
  });
}

/** Runs a store call that must answer within `ms`, or fails closed with `limitsUnavailable`. */
export async function withinDeadline<T>(ms: number, call: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([call(), late]);
  } catch (err) {
    throw limitsUnavailable(err);
  } finally {
    clearTimeout(timer);
  }
}
