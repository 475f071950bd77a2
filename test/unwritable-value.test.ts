import { describe, expect, it } from 'vitest';
import { unwritableValue } from '../src/ledger/unwritable-value.js';
import { chargeMaker } from './helpers/charges.js';

const charge = chargeMaker('unwritable', Date.UTC(2026, 10, 27));

describe('unwritableValue: what in a charge no column of the ledger can hold', () => {
  it('is nothing for a charge whose values fit, up to the edges of their columns', () => {
    expect(unwritableValue(charge('a', 'k', 5n))).toBeUndefined();
    expect(unwritableValue(charge('a', 'k', 2n ** 63n - 1n, undefined, { byokUsage: -(2n ** 63n), tokensPrompt: 2 ** 31 - 1, latencyMs: 0 }))).toBeUndefined();
  });

  it('names money past a 64-bit integer', () => {
    expect(unwritableValue(charge('a', 'k', 2n ** 64n))).toBe(`total_cost ${2n ** 64n} is outside a 64-bit integer`);
    expect(unwritableValue(charge('a', 'k', 1n, undefined, { byokUsage: 2n ** 63n }))).toMatch(/^byok_usage \d+ is outside a 64-bit integer$/);
  });

  it('names tokens and latency that are not 32-bit integers, and a time that is not a whole number', () => {
    expect(unwritableValue(charge('a', 'k', 1n, undefined, { tokensPrompt: 2 ** 31 }))).toBe('tokens_prompt 2147483648 is not a 32-bit integer');
    expect(unwritableValue(charge('a', 'k', 1n, undefined, { tokensCompletion: 1.5 }))).toBe('tokens_completion 1.5 is not a 32-bit integer');
    expect(unwritableValue(charge('a', 'k', 1n, undefined, { latencyMs: Number.NaN }))).toBe('latency_ms NaN is not a 32-bit integer');
    expect(unwritableValue(charge('a', 'k', 1n, 1.5))).toBe("created_at 1.5 is not a time (whole milliseconds within JavaScript's dates)");
    expect(unwritableValue(charge('a', 'k', 1n, 8.7e15))).toMatch(/^created_at 8700000000000000 is not a time/); // a whole number, past any date
  });

  it('names a text with a NUL (PostgreSQL refuses it), but not a finish reason (stored with it replaced)', () => {
    expect(unwritableValue(charge('a', 'k', 1n, undefined, { model: 'm\u0000' }))).toBe('model holds a NUL character');
    expect(unwritableValue(charge('a', 'k', 1n, undefined, { finishReason: 'stop\u0000' }))).toBeUndefined();
  });
});
