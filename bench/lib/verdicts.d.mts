// Types of verdicts.mjs, for the tests that import it.
export const TARGETS: Record<'sqlite' | 'postgres-redis', { json: number; sse: number }>;
export const LATENCY_TARGET_MS: number;
export function latencyVerdict(l: { added_p99_ms: number }): string;
export function disturbedRounds(fullerRuns: ReadonlyArray<ReadonlyArray<{ cpuUs: number }>>, bareRuns: ReadonlyArray<{ cpuUs: number }>): number[];
export function cpuVerdict(ratioRounds: readonly number[], target: number | undefined, leftOut: readonly number[]): string | undefined;
