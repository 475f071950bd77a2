/** Whether `err` is SQLite's "database is locked" (SQLITE_BUSY, or one of its extended codes). */
export function isSqliteBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'));
}

/** Blocks the thread for `ms` (start-up only: nothing is served while it waits). */
function blockFor(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * `step()`, tried again every `everyMs` while it fails with SQLITE_BUSY, for up to `forMs`; then its
 * error. For the steps SQLite does not wait on by itself: two connections that both read a new file
 * and both ask to switch it to WAL would each wait for the other, so SQLite fails one at once, without
 * its busy timeout (two starts on a fresh data folder at the same moment).
 */
export function retriedWhileBusy<T>(step: () => T, forMs: number, options: { everyMs?: number; now?: () => number; sleep?: (ms: number) => void } = {}): T {
  const { everyMs = 20, now = Date.now, sleep = blockFor } = options;
  const until = now() + forMs;
  for (;;) {
    try {
      return step();
    } catch (err) {
      if (!isSqliteBusy(err) || now() >= until) throw err;
      sleep(everyMs);
    }
  }
}
