import type { Metrics } from './metrics.js';

/** How far back the health of a provider looks, and the width of one bucket of it. */
const WINDOW_MS = 5 * 60_000;
const BUCKET_MS = 60_000;

interface Bucket {
  start: number;
  ok: number;
  failures: Map<string, number>;
  latencySum: number;
  latencyMax: number;
  ttftSum: number;
  ttftCount: number;
}

/** A provider's recent health, as the operator's dashboard shows it. */
export interface ProviderHealthRow {
  provider: string;
  /** Calls answered (a stream: to its end) in the window. */
  ok: number;
  /** Calls that failed before any output in the window, by kind. */
  failures: Record<string, number>;
  /** failures / (ok + failures), or null without calls. */
  error_rate: number | null;
  /** Mean and worst time to a full answer, in ms; mean time to a stream's first output. */
  latency_ms: { mean: number | null; max: number | null; ttft_mean: number | null };
}

/**
 * Each provider's calls over the last few minutes, kept in this process only (several processes each
 * keep their own): successes with their latency, and failures by kind. Fed as one more Metrics sink;
 * memory is a few minute buckets a provider, whatever the traffic.
 */
export class ProviderHealth implements Metrics {
  private readonly buckets = new Map<string, Bucket[]>();

  constructor(private readonly now: () => number) {}

  readonly windowSeconds = WINDOW_MS / 1000;

  private bucket(provider: string): Bucket {
    const start = Math.floor(this.now() / BUCKET_MS) * BUCKET_MS;
    let list = this.buckets.get(provider);
    if (!list) this.buckets.set(provider, (list = []));
    const last = list.at(-1);
    if (last && last.start === start) return last;
    const fresh: Bucket = { start, ok: 0, failures: new Map(), latencySum: 0, latencyMax: 0, ttftSum: 0, ttftCount: 0 };
    list.push(fresh);
    while (list.length > 0 && (list[0] as Bucket).start <= start - WINDOW_MS) list.shift();
    return fresh;
  }

  upstreamDuration(provider: string, seconds: number): void {
    const b = this.bucket(provider);
    const ms = seconds * 1000;
    b.ok += 1;
    b.latencySum += ms;
    b.latencyMax = Math.max(b.latencyMax, ms);
  }

  timeToFirstToken(provider: string, seconds: number): void {
    const b = this.bucket(provider);
    b.ttftSum += seconds * 1000;
    b.ttftCount += 1;
  }

  upstreamFailure(provider: string, kind: string): void {
    const b = this.bucket(provider);
    b.failures.set(kind, (b.failures.get(kind) ?? 0) + 1);
  }

  request(): void {}
  refusal(): void {}
  charged(): void {}
  fallback(): void {}
  held(): void {}
  chargeLag(): void {}

  /** Every provider in `known` (configured ones, even idle) and any other that was called, over the window. */
  snapshot(known: readonly string[]): ProviderHealthRow[] {
    const since = this.now() - WINDOW_MS;
    const names = [...new Set([...known, ...this.buckets.keys()])];
    return names.map((provider) => {
      const recent = (this.buckets.get(provider) ?? []).filter((b) => b.start + BUCKET_MS > since);
      const failures: Record<string, number> = {};
      let ok = 0;
      let failed = 0;
      let latencySum = 0;
      let latencyMax = 0;
      let ttftSum = 0;
      let ttftCount = 0;
      for (const b of recent) {
        ok += b.ok;
        latencySum += b.latencySum;
        latencyMax = Math.max(latencyMax, b.latencyMax);
        ttftSum += b.ttftSum;
        ttftCount += b.ttftCount;
        for (const [kind, n] of b.failures) {
          failures[kind] = (failures[kind] ?? 0) + n;
          failed += n;
        }
      }
      const round = (v: number) => Math.round(v * 10) / 10;
      return {
        provider,
        ok,
        failures,
        error_rate: ok + failed === 0 ? null : Math.round((failed / (ok + failed)) * 1000) / 1000,
        latency_ms: {
          mean: ok === 0 ? null : round(latencySum / ok),
          max: ok === 0 ? null : round(latencyMax),
          ttft_mean: ttftCount === 0 ? null : round(ttftSum / ttftCount),
        },
      };
    });
  }
}
