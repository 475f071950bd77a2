import { countTokens as countO200k } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { countTokens } from '../src/tokenizer/count-tokens.js';

// The gateway counts tokens itself when an upstream reports no usage (or one that cannot be true), for
// what a cut-short stream delivered, and to refine a prompt's estimate before refusing it. Byte-pair
// merging is quadratic in the length of one piece, and o200k leaves runs without a space unbounded.

/** Letters and punctuation without a space, from a fixed seed (no piece of it repeats). */
function blob(length: number): string {
  let seed = 12345;
  const chars = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ-_=+/.:;';
  let out = '';
  for (let i = 0; i < length; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    out += chars[seed % chars.length];
  }
  return out;
}

describe('counting tokens', () => {
  it('counts ordinary text exactly as o200k does', () => {
    const texts = [
      'Hello, world!',
      'The patient was stable and the results were normal.\n\n'.repeat(200),
      'naïve café — 日本語のテキスト 👋 emoji, 12345678 digits',
      '```ts\nconst x = await fetch(url);\n```',
      `${'word '.repeat(100)}\n${'  indented line\n'.repeat(20)}`,
    ];
    for (const t of texts) expect(countTokens(t), t.slice(0, 40)).toBe(countO200k(t));
  });

  it('counts a long run without a space a slice at a time, close to its exact count', () => {
    const run = blob(4096);
    const sliced = Array.from({ length: 4096 / 128 }, (_, i) => countO200k(run.slice(i * 128, (i + 1) * 128))).reduce((a, b) => a + b, 0);
    expect(countTokens(run)).toBe(sliced);
    const exact = countO200k(run);
    expect(countTokens(run)).toBeGreaterThanOrEqual(exact);
    expect(countTokens(run)).toBeLessThanOrEqual(exact + 4096 / 128);
  });

  it('a megabyte without a space is counted, one slice at a time (whole, it held the event loop for many minutes)', () => {
    const text = `Here it is: ${blob(1_000_000)} and that was all.`;
    const n = countTokens(text);
    expect(n).toBeGreaterThan(1_000_000 / 4);
    expect(n).toBeLessThan(1_000_000);
  });

  it('never cuts between the two halves of a character outside the basic plane', () => {
    // 'a' then 300 emoji (two UTF-16 units, one token, each; half of one is a token too): at 128 units from the run's start falls the second
    // half of an emoji, so the slice ends one unit later, and so on.
    const run = `a${'😀'.repeat(300)}`;
    const cuts = [0, 129, 257, 385, 513, run.length];
    const expected = cuts.slice(1).reduce((sum, end, i) => sum + countO200k(run.slice(cuts[i], end)), 0);
    expect(countTokens(run)).toBe(expected);
  });
});
