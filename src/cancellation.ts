/**
 * Whether a request or a call is cancelled, why, and an `abort` event when it becomes so. It is the
 * shape undici takes for a request's `signal` (an emitter of `abort` with `aborted` and `reason`), so it
 * is passed to undici as it is. The gateway uses it instead of AbortSignal on its hot path: in Node 20
 * an AbortSignal costs microseconds to create and to listen to (an EventTarget, tracked for
 * `AbortSignal.any`), several times a request.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  /** Why it was cancelled (a DOMException: `AbortError`, or `TimeoutError` for a deadline). */
  readonly reason: unknown;
  once(event: 'abort', listener: () => void): unknown;
  off(event: 'abort', listener: () => void): unknown;
}

/**
 * A CancelSignal and the means to cancel it (what AbortController is to AbortSignal). Its one event
 * comes once, so each listener is told at most once however it was added, and a listener list is all
 * it keeps: an EventEmitter (what it was) cost a request ~2,000 instructions more in its set-up, its
 * `once` wrappers and their removal (bench/README.md, thirty-first session). It answers the part of
 * the emitter's interface undici uses on a request's signal (`on`, `once`, `removeListener`).
 */
export class Cancellation implements CancelSignal {
  aborted = false;
  reason: unknown = undefined;
  /** The listeners to tell, in the order they were added; none once aborted. */
  private listeners: Array<() => void> | undefined = undefined;

  get signal(): CancelSignal {
    return this;
  }

  /** Adds a listener of `abort` (every listener is told once: the event comes once). */
  once(_event: 'abort', listener: () => void): this {
    if (this.aborted) return this;
    if (this.listeners) this.listeners.push(listener);
    else this.listeners = [listener];
    return this;
  }

  on(event: 'abort', listener: () => void): this {
    return this.once(event, listener);
  }

  /** Removes a listener, the last added if it was added more than once (as an emitter does). */
  off(_event: 'abort', listener: () => void): this {
    const listeners = this.listeners;
    if (listeners) {
      const i = listeners.lastIndexOf(listener);
      if (i >= 0) listeners.splice(i, 1);
    }
    return this;
  }

  removeListener(event: 'abort', listener: () => void): this {
    return this.off(event, listener);
  }

  listenerCount(_event: 'abort'): number {
    return this.listeners?.length ?? 0;
  }

  /** Cancels it (once: a second call changes nothing); `reason` defaults to an `AbortError`. */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    const listeners = this.listeners;
    this.listeners = undefined;
    // As an emitter tells them: in order, each once; one that throws stops the rest, and the throw
    // reaches the caller.
    if (listeners) for (const listener of listeners) listener();
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
