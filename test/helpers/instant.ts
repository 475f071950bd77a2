/**
 * Now, in milliseconds since the epoch, to a fraction of a millisecond, and never going back.
 *
 * For tests that sort events into phases by when they happened (a request sent before or after Redis
 * was paused): Date.now() counts whole milliseconds, so a request started earlier in the millisecond
 * the pause was taken in reads the same as the pause and was counted as sent during it.
 */
export const instant = (): number => performance.timeOrigin + performance.now();
