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

/** One Metrics that records into each of `sinks` (Prometheus, and the in-process provider health). */
export function teeMetrics(...sinks: Metrics[]): Metrics {
  return {
    request: (...a) => sinks.forEach((m) => m.request(...a)),
    refusal: (...a) => sinks.forEach((m) => m.refusal(...a)),
    charged: (...a) => sinks.forEach((m) => m.charged(...a)),
    upstreamDuration: (...a) => sinks.forEach((m) => m.upstreamDuration(...a)),
    timeToFirstToken: (...a) => sinks.forEach((m) => m.timeToFirstToken(...a)),
    upstreamFailure: (...a) => sinks.forEach((m) => m.upstreamFailure(...a)),
    fallback: (...a) => sinks.forEach((m) => m.fallback(...a)),
    held: (...a) => sinks.forEach((m) => m.held(...a)),
    chargeLag: (...a) => sinks.forEach((m) => m.chargeLag(...a)),
  };
}
