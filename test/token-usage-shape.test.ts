import { describe, expect, it } from 'vitest';
import { billedUsage } from '../src/chat/billed-usage.js';
import { billedCompletionTokens, costOf, tokenUsage } from '../src/ledger/pricing.js';
import { usageOf } from '../src/providers/usage.js';

/**
 * Every usage object has one shape: the same four fields in the same order, absent ones undefined. The
 * functions that read them (costOf, billedCompletionTokens, the settlement) run on every request, and
 * objects of several shapes made their property loads megamorphic (bench/README.md: the fix took ~8 % of
 * a SQLite JSON request's CPU). The values stay what they were: an absent total or image count reads
 * as undefined, as before.
 */
const FIELDS = ['promptTokens', 'completionTokens', 'totalTokens', 'images'];

describe('token usage: one shape wherever it is made', () => {
  it('from an upstream report with or without a total, from x_groq, from the gateway own count, and from a cut-short stream', () => {
    const withTotal = usageOf({ usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } })!;
    const withoutTotal = usageOf({ usage: { prompt_tokens: 10, completion_tokens: 5 } })!;
    const groq = usageOf({ x_groq: { usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } } })!;
    const counted = tokenUsage(10, 8, undefined, 2);
    const cutShort = billedUsage({ upstream: withTotal, counted: () => counted, contextLength: 1000, endedNormally: false }).usage;
    for (const u of [withTotal, withoutTotal, groq, counted, cutShort]) expect(Object.keys(u)).toEqual(FIELDS);

    expect(withTotal).toEqual({ promptTokens: 10, completionTokens: 5, totalTokens: 15, images: undefined });
    expect(withoutTotal.totalTokens).toBeUndefined();
    // A stream cut short is charged what it delivered (8), over the upstream's prompt, its image count kept.
    expect(cutShort).toEqual({ promptTokens: 10, completionTokens: 8, totalTokens: 18, images: undefined });
  });

  it('prices the same as before: an absent total or image count adds nothing', () => {
    const prices = { prompt: 1_000_000n, completion: 2_000_000n, request: 0n, image: 5_000_000n };
    expect(billedCompletionTokens(tokenUsage(10, 5))).toBe(5);
    expect(billedCompletionTokens(tokenUsage(10, 5, 25))).toBe(15); // reasoning counted in the total only
    expect(costOf(tokenUsage(10, 5), prices)).toBe(costOf(tokenUsage(10, 5, undefined, 0), prices));
    expect(costOf(tokenUsage(10, 5, undefined, 2), prices) - costOf(tokenUsage(10, 5), prices)).toBe(10n); // 2 images × 5e6 femto = 10 nano
  });
});
