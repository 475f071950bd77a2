import { setFlagsFromString } from 'node:v8';

/** How far V8 lets the old generation grow past its live size before a full collection, in percent. */
export const HEAP_GROWING_PERCENT = 100;

/**
 * A gateway's heap is mostly request and stream objects that die when their request ends; those of
 * long streams outlive the young generation and die in the old one. Left to its own heuristics, V8
 * lets the old generation grow to three or four times its live size before collecting it, so with
 * 1,000 ten-second streams the process's memory climbed past 400 MB for 90 MB of live objects
 * (bench/README.md, the soak). Here the old generation may at most double between full collections:
 * the same soak stays under 300 MB and flat, for no CPU a request that the bench can tell apart.
 *
 * Set once, as the gateway starts serving (V8 reads it at each collection). An operator who passes
 * `--heap-growing-percent` to node keeps their own.
 */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => a.startsWith('--heap-growing-percent') || a.startsWith('--heap_growing_percent'))) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
