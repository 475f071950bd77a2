import { EventEmitter } from 'node:events';

/**
 * Whether a request or a call is cancelled, why, and an `abort` event when it becomes so. It is the
 * shape undici takes for a request's `signal` (an emitter of `abort` with `aborted` and `reason`), so it
 * is passed to undici as it is. The gateway uses it instead of AbortSignal on its hot path: in Node 20
 * an AbortSignal costs microseconds to create and to listen to (an EventTarget, tracked for
 * `AbortSignal.any`), several times a request; an emitter costs a fraction of one.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  /** Why it was cancelled (a DOMException: `AbortError`, or `TimeoutError` for a deadline). */
  readonly reason: unknown;
  once(event: 'abort', listener: () => void): unknown;
  off(event: 'abort', listener: () => void): unknown;
}

/** A CancelSignal and the means to cancel it (what AbortController is to AbortSignal). */
export class Cancellation extends EventEmitter implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;

  constructor() {
    super();
    // Every attempt of a request listens while it runs (fallbacks add theirs one at a time); no cap.
    this.setMaxListeners(0);
  }

  get signal(): CancelSignal {
    return this;
  }

  /** Cancels it (once: a second call changes nothing); `reason` defaults to an `AbortError`. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    this.emit('abort');
  }
}

/**
 * Why a request was cancelled, in words for its answer and its log line: the reason's own message when
 * the gateway cancelled it (a deadline, `TimeoutError`; shutting down, `SHUTDOWN`), else the client's
 * doing (it went away: the default `AbortError`).
 */
export function cancelMessage(reason: unknown): string {
  return reason instanceof DOMException && reason.name !== 'AbortError' ? reason.message : 'the request was cancelled by the client';
}

/** The reason running requests are cancelled with when the gateway shuts down (see cancelMessage). */
export const SHUTDOWN = 'ShutdownError';

/** Resolves after `ms`, or as soon as `signal` is cancelled (never rejects). */
export function cancellableSleep(ms: number, signal: CancelSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.off('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.once('abort', done);
  });
}
