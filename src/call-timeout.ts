import { Cancellation, type CancelSignal } from './cancellation.js';
import { systemClock, type Clock } from './clock.js';

/** A call's cancellation: the caller's signal, or its own timeout, whichever comes first. */
export interface CallTimeout {
  signal: CancelSignal;
  /** Ends the timer and the link to the caller's signal; call it when the call ends, however it ends. */
  clear(): void;
}

/**
 * A signal that aborts when `parent` does, or with a `TimeoutError` after `ms` (a timer of `timers`). The
 * timer holds the cancellation, so the timeout lives exactly as long as the call (unlike
 * `AbortSignal.timeout` inside `AbortSignal.any`, which a garbage collection may drop while the call
 * still runs), and `clear()` leaves no timer or listener behind.
 */
export function callTimeout(parent: CancelSignal, ms: number, timers: Pick<Clock, 'schedule'> = systemClock): CallTimeout {
  const own = new Cancellation();
  const onParentAbort = () => own.abort(parent.reason);
  const timer = timers.schedule(ms, () => own.abort(new DOMException(`the call took longer than ${ms} ms`, 'TimeoutError')));
  const clear = () => {
    timer.cancel();
    parent.off('abort', onParentAbort);
  };
  own.once('abort', clear);
  if (parent.aborted) onParentAbort();
  else parent.once('abort', onParentAbort);
  return { signal: own, clear };
}
