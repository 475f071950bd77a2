import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chatRequestSchema, parseChatRequest, plainlyValid } from '../src/chat/request-schema.js';

// Issue 9: the usual request is vouched for by a hand check instead of zod, which copies it. What matters
// is that the hand check never vouches for a body zod would refuse or read differently.

const anyValue = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.string({ maxLength: 3 }),
  fc.integer({ min: -3, max: 200 }),
  fc.constantFrom(0.5, 1e9, 2e7, Number.MAX_SAFE_INTEGER + 2, 10_000_000, 10_000_001, 128, 129),
  fc.array(fc.string({ maxLength: 2 }), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 2 }), fc.string({ maxLength: 2 }), { maxKeys: 2 }),
);
const message = fc.oneof(
  fc.record({ role: fc.constantFrom('user', 'assistant', 'system', ''), content: fc.string({ maxLength: 5 }) }),
  fc.record({ role: anyValue, content: anyValue }, { requiredKeys: [] }),
  anyValue,
);
const body = fc.record(
  {
    model: fc.oneof(fc.constantFrom('vendor/model', ''), anyValue),
    messages: fc.oneof(fc.array(message, { maxLength: 3 }), anyValue),
    stream: anyValue,
    max_tokens: anyValue,
    max_completion_tokens: anyValue,
    n: anyValue,
    models: anyValue,
    provider: anyValue,
    plugins: anyValue,
    temperature: anyValue,
  },
  { requiredKeys: [] },
);

describe('requests vouched for without zod', () => {
  it('never vouches for a body zod refuses, and reads what it vouches for as zod does', () => {
    fc.assert(
      fc.property(body, (b) => {
        // Keys set to undefined are not in a parsed JSON body.
        const json = JSON.parse(JSON.stringify(b)) as Record<string, unknown>;
        if (!plainlyValid(json)) return;
        const zod = chatRequestSchema.safeParse(json);
        expect(zod.success).toBe(true);
        expect(parseChatRequest(json)).toEqual(zod.data);
      }),
      { numRuns: 3000 },
    );
  });

  it('names the fault of a token cap: past the ceiling (1e300 too), not whole, below 1', () => {
    const refusal = (maxTokens: number) => {
      try {
        parseChatRequest({ model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: maxTokens });
        return 'accepted';
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(refusal(1e300)).toBe('max_tokens: must be at most 10000000');
    expect(refusal(20_000_000)).toBe('max_tokens: must be at most 10000000');
    expect(refusal(1.5)).toBe('max_tokens: must be a whole number');
    expect(refusal(0)).toBe('max_tokens: must be at least 1');
    expect(refusal(100)).toBe('accepted');
  });

  it('vouches for the usual request, and leaves the routing fields and invalid ones to zod', () => {
    const usual = {
      model: 'vendor/model',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
      stream: true,
      max_tokens: 100,
      temperature: 0.2,
    };
    expect(plainlyValid(usual)).toBe(true);
    for (const unusual of [
      { ...usual, models: ['a/b'] },
      { ...usual, provider: { order: ['x'] } },
      { ...usual, plugins: [{ id: 'web' }] },
      { ...usual, max_tokens: 0 },
      { ...usual, max_tokens: 1.5 },
      { ...usual, n: 129 },
      { ...usual, stream: 'yes' },
      { ...usual, messages: [] },
      { ...usual, messages: [{ content: 'no role' }] },
      { ...usual, model: '' },
    ]) {
      expect(plainlyValid(unusual)).toBe(false);
    }
    expect(() => parseChatRequest({ ...usual, max_tokens: 0 })).toThrow('max_tokens: must be at least 1');
  });
});
