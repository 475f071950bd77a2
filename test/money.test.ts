import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { creditsFromJson, creditsFromString, creditsFromText, creditsToJson, formatCredits, priceFromString } from '../src/ledger/money.js';
import { billedCompletionTokens, byokFee, costOf, pricingFrom } from '../src/ledger/pricing.js';

describe('money', () => {
  it('parses decimals exactly and refuses finer than a nanocredit', () => {
    expect(creditsFromString('0.1') + creditsFromString('0.2')).toBe(creditsFromString('0.3'));
    expect(creditsFromJson(0.1)).toBe(100_000_000n);
    expect(creditsFromJson(1e-9)).toBe(1n);
    expect(creditsFromJson(-2.5)).toBe(-2_500_000_000n);
    expect(() => creditsFromJson(1e-10)).toThrow(/more than 9 decimals/);
    expect(() => creditsFromString('1.2.3')).toThrow(/not a decimal/);
    expect(priceFromString('0.000000000000001')).toBe(1n);
  });

  it('reads a number as written (JSON number text) exactly, its exponent applied to the digits', () => {
    expect(creditsFromText('123456789.123456789')).toBe(123_456_789_123_456_789n);
    expect(creditsFromText('1.5e2')).toBe(150_000_000_000n);
    expect(creditsFromText('-25E-1')).toBe(-2_500_000_000n);
    expect(creditsFromText('1e-9')).toBe(1n);
    expect(creditsFromText('0.000000001000000000e0')).toBe(1n); // trailing zeros are not decimals
    expect(() => creditsFromText('12e-12')).toThrow(/more than 9 decimals/);
    expect(() => creditsFromText('1e-10')).toThrow(/more than 9 decimals/);
    expect(() => creditsFromText('1.0000000000000001')).toThrow(/more than 9 decimals/);
    expect(() => creditsFromText('1e401')).toThrow(/out of range/);
    expect(() => creditsFromText('0x10')).toThrow(/not a decimal/);
    // What a person types on the command line too.
    expect(creditsFromText('.5')).toBe(500_000_000n);
    expect(creditsFromText('5.')).toBe(5_000_000_000n);
    expect(creditsFromText('+5')).toBe(5_000_000_000n);
    for (const bad of ['', '.', '-', '+', 'e5', '1e']) expect(() => creditsFromText(bad)).toThrow(/not a decimal/);
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }), fc.integer({ min: -5, max: 5 }), (n, shift) => {
        // The same amount written with its point moved and an exponent to make up for it.
        const text = formatCredits(n);
        const [whole, frac = ''] = text.replace('-', '').split('.');
        const digits = `${whole}${frac}`;
        const at = (whole as string).length + shift;
        const moved = at <= 0 ? `0.${'0'.repeat(-at)}${digits}` : at >= digits.length ? digits.padEnd(at, '0') : `${digits.slice(0, at)}.${digits.slice(at)}`;
        expect(creditsFromText(`${n < 0n ? '-' : ''}${moved}e${-shift}`)).toBe(n);
      }),
    );
  });

  it('formats any amount back to the same decimal', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }), (n) => {
        expect(creditsFromString(formatCredits(n))).toBe(n);
      }),
    );
    expect(formatCredits(1500n)).toBe('0.0000015');
    expect(creditsToJson(123_456_789n)).toBe(0.123456789);
  });

  it('turns an amount into the JSON number its exact decimal text reads as', () => {
    // creditsToJson divides within 2^53 instead of writing and parsing the text: the same double.
    const edge = 2n ** 53n;
    const amounts = fc.oneof(
      fc.bigInt({ min: -(10n ** 18n), max: 10n ** 18n }),
      fc.bigInt({ min: -1_000_000_000_000n, max: 1_000_000_000_000n }),
      fc.bigInt({ min: edge - 1000n, max: edge + 1000n }),
      fc.bigInt({ min: -edge - 1000n, max: -edge + 1000n }),
    );
    fc.assert(
      fc.property(amounts, (n) => {
        expect(creditsToJson(n)).toBe(Number(formatCredits(n)));
      }),
      { numRuns: 5000 },
    );
    expect(creditsToJson(-1n)).toBe(-0.000000001);
    expect(creditsToJson(0n)).toBe(0);
  });

  it('costs tokens at femtocredit prices, rounding the total up to a nanocredit once', () => {
    const p = pricingFrom({ prompt: '0.0000000015', completion: '0.000002', request: '0.001', image: '0.01' });
    // 3 × 1.5e-9 = 4.5e-9 → with 1 completion (2e-6), request 1e-3 and 2 images 2e-2: 0.0210020045 → rounds up
    expect(formatCredits(costOf({ promptTokens: 3, completionTokens: 1, images: 2 }, p))).toBe('0.021002005');
  });

  it('bills reasoning tokens left out of completion_tokens', () => {
    expect(billedCompletionTokens({ promptTokens: 12, completionTokens: 2, totalTokens: 354 })).toBe(342);
    expect(billedCompletionTokens({ promptTokens: 12, completionTokens: 50, totalTokens: 40 })).toBe(50);
    expect(billedCompletionTokens({ promptTokens: 12, completionTokens: 7 })).toBe(7);
  });

  it('charges the BYOK fee as a fraction of the list cost, rounded up', () => {
    expect(byokFee(2_000_000n, 0.05)).toBe(100_000n);
    expect(byokFee(1n, 0.05)).toBe(1n);
    expect(byokFee(0n, 0.05)).toBe(0n);
  });

  it('sums thousands of small charges without losing a nanocredit', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(5000), fc.nat(5000)), { minLength: 1000, maxLength: 3000 }), (reqs) => {
        const p = pricingFrom({ prompt: '0.000000123', completion: '0.000000457', request: '0', image: '0' });
        let total = 0n;
        for (const [i, o] of reqs) total += costOf({ promptTokens: i, completionTokens: o }, p);
        const expected = reqs.reduce((s, [i, o]) => s + BigInt(i) * 123n + BigInt(o) * 457n, 0n);
        expect(total).toBe(expected); // prices at whole nanocredits: no rounding anywhere
      }),
      { numRuns: 20 },
    );
  });
});
