/**
 * Waits for `promise` at most `ms`: true when it settled (resolved or rejected) in time, false when
 * the time ran out first. Never rejects, and clears its timer either way. `unref`: the timer does not
 * keep the process alive by itself.
 */
export async function settledWithin(promise: Promise<unknown>, ms: number, options: { unref?: boolean } = {}): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
    if (options.unref) timer.unref();
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
