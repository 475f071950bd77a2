import type { UsageSource } from '../ledger/ledger.js';
import { billedCompletionTokens, tokenUsage, type TokenUsage } from '../ledger/pricing.js';

/** The token counts a request is charged, and where they came from. */
export interface BilledUsage {
  usage: TokenUsage;
  source: UsageSource;
}

/**
 * Whether an upstream's counts can be true. "A reported count that cannot be true (more tokens than
 * the model's context_length) is not believed: the gateway counts what it delivered instead"
 * (CONTRACT §7). The context holds the prompt and the completion together, so it is their sum (the
 * larger of prompt + completion and total_tokens: billedCompletionTokens) that must fit. A count within
 * it is believed, reasoning billed beyond the request's cap included.
 */
export function believable(u: TokenUsage, contextLength: number): boolean {
  return u.promptTokens + billedCompletionTokens(u) <= contextLength;
}

export interface BilledUsageInput {
  /** The last usage the upstream reported, if any. */
  upstream: TokenUsage | undefined;
  /** The gateway's own count of the prompt and of what it delivered. */
  counted: () => TokenUsage;
  contextLength: number;
  /** The answer ended as the upstream meant it to (a whole answer; a stream that reached its end). */
  endedNormally: boolean;
}

/**
 * What a request is charged (CONTRACT §7). An answer that ended normally: the upstream's usage when
 * it reported a believable one, else the gateway's count. A stream cut short (upstream failure,
 * client gone): everything it delivered, and never less than a believable upstream figure; a partial
 * usage figure an early chunk carried does not stand for what came after it.
 */
export function billedUsage(input: BilledUsageInput): BilledUsage {
  const upstream = input.upstream && believable(input.upstream, input.contextLength) ? input.upstream : undefined;
  if (input.endedNormally && upstream) return { usage: upstream, source: 'upstream' };
  const counted = input.counted();
  if (!upstream) return { usage: counted, source: 'counted' };
  const reported = billedCompletionTokens(upstream);
  const delivered = billedCompletionTokens(counted);
  if (reported >= delivered) return { usage: upstream, source: 'upstream' };
  // The upstream's prompt count stands; the completion is what was delivered.
  return { usage: tokenUsage(upstream.promptTokens, delivered, upstream.promptTokens + delivered, upstream.images), source: 'counted' };
}
