import { tokenUsage, type TokenUsage } from '../ledger/pricing.js';
import type { Chunk } from './provider.js';

/**
 * More tokens than any request can really use: a count above it is not believed. (A count above the
 * serving model's context_length is not believed either: chat/billed-usage.ts.)
 */
export const MAX_REPORTED_TOKENS = 100_000_000;

const plausible = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= MAX_REPORTED_TOKENS;

function readCounts(u: unknown): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const o = u as Record<string, unknown>;
  const { prompt_tokens: prompt, completion_tokens: completion, total_tokens: total } = o;
  // Counts that are not whole, non-negative and plausible are no usage at all: the gateway counts.
  if (!plausible(prompt)) return undefined;
  if (plausible(completion)) return tokenUsage(prompt, completion, plausible(total) ? total : undefined);
  // A total without a completion count: the completion is what the total holds beyond the prompt.
  if (completion === undefined && plausible(total) && total >= prompt) return tokenUsage(prompt, total - prompt, total);
  return undefined;
}

/**
 * Token counts from an upstream answer or chunk, wherever the provider put them: `usage` (OpenAI,
 * Azure, DeepSeek, Mistral, xAI) or, when that is absent, `x_groq.usage` (Groq).
 */
export function usageOf(payload: Chunk): TokenUsage | undefined {
  const direct = readCounts(payload.usage);
  if (direct) return direct;
  const xGroq = payload.x_groq;
  if (xGroq && typeof xGroq === 'object') return readCounts((xGroq as Record<string, unknown>).usage);
  return undefined;
}
