/** Nanocredits (the ledger's exact money: bigint, 1e-9 credit). */
type Nano = bigint;

/**
 * What the gateway reports for operators (CONTRACT §10). Core code records through this port; the
 * Prometheus implementation (prom-metrics.ts) is chosen in main.ts, and tests may pass `noMetrics`.
 */
export interface Metrics {
  /** A request to the chat route ended with this HTTP status (model and provider: what served it, or "" ). */
  request(model: string, provider: string, status: number): void;
  /** A 402 or a platform 429: by status, and by the limit_source (402) or limit (429) that refused it. */
  refusal(status: number, limitSource: string, limit: string): void;
  /** A charge: credits charged to the balance and tokens billed. */
  charged(model: string, provider: string, cost: Nano, promptTokens: number, completionTokens: number): void;
  /** How long an upstream took to answer in full (a stream: to its end). */
  upstreamDuration(provider: string, seconds: number): void;
  /** How long a streamed answer took to its first output. */
  timeToFirstToken(provider: string, seconds: number): void;
  /** An upstream call failed before any output (every failed attempt, the last one of a request included), and why. */
  upstreamFailure(provider: string, kind: string): void;
  /** An attempt failed before any output and the request moved on to the next endpoint or model. */
  fallback(fromProvider: string, reason: string): void;
  /** Credits this process's running requests hold (a gauge: add when held, subtract when settled). */
  held(delta: Nano): void;
  /** From an answer's settlement to its charge being durable in the ledger. */
  chargeLag(seconds: number): void;
}

/** Records nothing. */
export const noMetrics: Metrics = {
  request: () => undefined,
  refusal: () => undefined,
  charged: () => undefined,
  upstreamDuration: () => undefined,
  timeToFirstToken: () => undefined,
  upstreamFailure: () => undefined,
  fallback: () => undefined,
  held: () => undefined,
  chargeLag: () => undefined,
};

/**
 * One Metrics that records into each of `sinks` (Prometheus, and the in-process provider health).
 * Methods with their own parameters and plain loops: the chat route reports several times a request,
 * and forwarding through rest parameters and spread calls cost ~1,400 instructions a report.
 */
class TeeMetrics implements Metrics {
  constructor(private readonly sinks: readonly Metrics[]) {}

  request(model: string, provider: string, status: number): void {
    for (const m of this.sinks) m.request(model, provider, status);
  }

  refusal(status: number, limitSource: string, limit: string): void {
    for (const m of this.sinks) m.refusal(status, limitSource, limit);
  }

  charged(model: string, provider: string, cost: Nano, promptTokens: number, completionTokens: number): void {
    for (const m of this.sinks) m.charged(model, provider, cost, promptTokens, completionTokens);
  }

  upstreamDuration(provider: string, seconds: number): void {
    for (const m of this.sinks) m.upstreamDuration(provider, seconds);
  }

  timeToFirstToken(provider: string, seconds: number): void {
    for (const m of this.sinks) m.timeToFirstToken(provider, seconds);
  }

  upstreamFailure(provider: string, kind: string): void {
    for (const m of this.sinks) m.upstreamFailure(provider, kind);
  }

  fallback(fromProvider: string, reason: string): void {
    for (const m of this.sinks) m.fallback(fromProvider, reason);
  }

  held(delta: Nano): void {
    for (const m of this.sinks) m.held(delta);
  }

  chargeLag(seconds: number): void {
    for (const m of this.sinks) m.chargeLag(seconds);
  }
}

export function teeMetrics(...sinks: Metrics[]): Metrics {
  return new TeeMetrics(sinks);
}
