import type { TokenUsage } from '../ledger/pricing.js';
import type { Chunk } from './provider.js';

function readCounts(u: unknown): TokenUsage | undefined {
  if (!u || typeof u !== 'object') return undefined;
  const o = u as Record<string, unknown>;
  const prompt = o.prompt_tokens;
  const completion = o.completion_tokens;
  if (typeof prompt !== 'number' && typeof completion !== 'number') return undefined;
  const usage: TokenUsage = {
    promptTokens: typeof prompt === 'number' && prompt >= 0 ? Math.floor(prompt) : 0,
    completionTokens: typeof completion === 'number' && completion >= 0 ? Math.floor(completion) : 0,
  };
  if (typeof o.total_tokens === 'number' && o.total_tokens >= 0) usage.totalTokens = Math.floor(o.total_tokens);
  return usage;
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
