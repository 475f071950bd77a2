/** A call's cancellation: the caller's signal, or its own timeout, whichever comes first. */
export interface CallTimeout {
  signal: AbortSignal;
  /** Ends the timer and the link to the caller's signal; call it when the call ends, however it ends. */
  clear(): void;
}

/**
 * A signal that aborts when `parent` does, or with a `TimeoutError` after `ms`. The timer holds the
 * controller, so the timeout lives exactly as long as the call (unlike `AbortSignal.timeout` inside
 * `AbortSignal.any`, which a garbage collection may drop while the call still runs), and `clear()`
 * leaves no timer or listener behind.
 */
export function callTimeout(parent: AbortSignal, ms: number): CallTimeout {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  const timer = setTimeout(() => controller.abort(new DOMException(`the call took longer than ${ms} ms`, 'TimeoutError')), ms);
  const clear = () => {
    clearTimeout(timer);
    parent.removeEventListener('abort', onParentAbort);
  };
  controller.signal.addEventListener('abort', clear, { once: true });
  if (parent.aborted) onParentAbort();
  else parent.addEventListener('abort', onParentAbort, { once: true });
  return { signal: controller.signal, clear };
}
