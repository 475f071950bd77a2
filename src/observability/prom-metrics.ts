import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { Metrics } from './metrics.js';
import { SummedCounter } from './summed-counter.js';
import { SummedHistogram } from './summed-histogram.js';

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const LAG_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/**
 * Nanocredits as a metric value in credits: exact money becomes a float only here, at the edge, for
 * Prometheus, through its decimal text (no float arithmetic on the amount).
 */
function credits(nano: bigint): number {
  const sign = nano < 0n ? '-' : '';
  const abs = nano < 0n ? -nano : nano;
  return Number(`${sign}${abs / 1_000_000_000n}.${(abs % 1_000_000_000n).toString().padStart(9, '0')}`);
}

/**
 * The gateway's metrics in Prometheus' text format, on a registry of its own (several gateways in one
 * process, as in tests, do not share counters), with Node's default process metrics.
 */
export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly requests = new SummedCounter<number>(
    {
      name: 'tollgate_requests_total',
      help: 'Chat completion requests, by the model and provider that served them (empty when none did) and the HTTP status',
      labelNames: ['model', 'provider', 'status'],
      registry: this.registry,
    },
    0,
    (n) => n,
  );
  private readonly refusals = new Counter({
    name: 'tollgate_refusals_total',
    help: 'Requests the gateway refused itself: every 402 (by limit_source) and platform 429 (by limit)',
    labelNames: ['status', 'limit_source', 'limit'] as const,
    registers: [this.registry],
  });
  // Summed exactly in nanocredits, made credits when scraped.
  private readonly creditsCharged = new SummedCounter<bigint>(
    { name: 'tollgate_credits_charged_total', help: 'Credits charged to balances', labelNames: ['model', 'provider'], registry: this.registry },
    0n,
    credits,
  );
  private readonly tokens = new SummedCounter<number>(
    { name: 'tollgate_tokens_total', help: 'Tokens billed, by kind (prompt, completion)', labelNames: ['model', 'provider', 'kind'], registry: this.registry },
    0,
    (n) => n,
  );
  private readonly upstream = new SummedHistogram({
    name: 'tollgate_upstream_duration_seconds',
    help: 'Time from sending a request upstream to its answer ending',
    labelNames: ['provider'],
    buckets: LATENCY_BUCKETS,
    registry: this.registry,
  });
  private readonly ttft = new SummedHistogram({
    name: 'tollgate_time_to_first_token_seconds',
    help: 'Time from sending a streamed request upstream to its first output',
    labelNames: ['provider'],
    buckets: LATENCY_BUCKETS,
    registry: this.registry,
  });
  private readonly fallbacks = new Counter({
    name: 'tollgate_fallbacks_total',
    help: 'Attempts that failed before any output, after which the request moved on, by the provider that failed and why',
    labelNames: ['from_provider', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly upstreamFailures = new Counter({
    name: 'tollgate_upstream_failures_total',
    help: 'Upstream calls that failed before any output, by provider and kind (rate_limited, http, network, timeout, invalid_response)',
    labelNames: ['provider', 'kind'] as const,
    registers: [this.registry],
  });
  private heldNano = 0n;
  private readonly lag = new SummedHistogram({
    name: 'tollgate_charge_lag_seconds',
    help: 'Time from an answer being settled to its charge being durable in the ledger',
    labelNames: [],
    buckets: LAG_BUCKETS,
    registry: this.registry,
  });

  constructor() {
    const held = () => credits(this.heldNano);
    new Gauge({
      name: 'tollgate_inflight_held_credits',
      help: "Credits held by this process's running requests (their estimates)",
      registers: [this.registry],
      collect() {
        this.set(held());
      },
    });
    collectDefaultMetrics({ register: this.registry });
  }

  request(model: string, provider: string, status: number): void {
    this.requests.add(1, model, provider, String(status));
  }

  refusal(status: number, limitSource: string, limit: string): void {
    this.refusals.labels(String(status), limitSource, limit).inc();
  }

  charged(model: string, provider: string, cost: bigint, promptTokens: number, completionTokens: number): void {
    if (cost > 0n) this.creditsCharged.add(cost, model, provider);
    if (promptTokens > 0) this.tokens.add(promptTokens, model, provider, 'prompt');
    if (completionTokens > 0) this.tokens.add(completionTokens, model, provider, 'completion');
  }

  upstreamDuration(provider: string, seconds: number): void {
    this.upstream.observe(seconds, provider);
  }

  timeToFirstToken(provider: string, seconds: number): void {
    this.ttft.observe(seconds, provider);
  }

  upstreamFailure(provider: string, kind: string): void {
    this.upstreamFailures.labels(provider, kind).inc();
  }

  fallback(fromProvider: string, reason: string): void {
    this.fallbacks.labels(fromProvider, reason).inc();
  }

  held(delta: bigint): void {
    this.heldNano += delta;
  }

  chargeLag(seconds: number): void {
    this.lag.observe(seconds);
  }

  /** The text to answer a scrape with, and its content type. */
  async scrape(): Promise<{ text: string; contentType: string }> {
    return { text: await this.registry.metrics(), contentType: this.registry.contentType };
  }
}
