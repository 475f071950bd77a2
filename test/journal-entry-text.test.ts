import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toChargeRecord } from '../src/ledger/charge-record.js';
import { journalEntryCharges, journalEntryText } from '../src/ledger/journal-entry-text.js';
import type { Charge } from '../src/ledger/ledger.js';
import { chargeMaker } from './helpers/charges.js';

const text = fc.string({ unit: 'binary' });
const name = fc.oneof(fc.constantFrom('acct_1', 'acct_2', 'k'.repeat(64), 'openai/gpt-4o', 'stop'), text);
const amount = fc.oneof(fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }), fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }), fc.constantFrom(0n, 300_000n));
const T0 = Date.UTC(2026, 10, 27);

const charge: fc.Arbitrary<Charge> = fc.record({
  id: fc.string({ unit: 'binary', minLength: 1 }),
  accountId: name.filter((s) => s.length > 0),
  keyHash: name.filter((s) => s.length > 0),
  model: name,
  provider: name,
  tokensPrompt: fc.nat(),
  tokensCompletion: fc.nat(),
  totalCost: amount,
  byokUsage: amount,
  isByok: fc.boolean(),
  streamed: fc.boolean(),
  cancelled: fc.boolean(),
  finishReason: fc.option(name, { nil: null }),
  usageSource: fc.constantFrom('upstream' as const, 'counted' as const, null),
  createdAt: fc.oneof(fc.integer({ min: T0 - 10_000, max: T0 + 10_000 }), fc.maxSafeInteger(), fc.constant(-Number.MAX_SAFE_INTEGER)),
  latencyMs: fc.nat(),
});

const make = chargeMaker('journal', T0);
/** A charge of the bench's shape (a 64-character key hash, a realistic id and model). */
const sample = (i: number, extra: Partial<Charge> = {}): Charge =>
  make('acct_bench', 'k'.repeat(64), 300_000n, T0 + i, {
    id: `gen-1764201600-${String(i).padStart(3, '0')}AbCdEfGhIjKlMn`,
    model: 'bench/paid',
    provider: 'bench',
    tokensPrompt: 260,
    tokensCompletion: 20,
    ...extra,
  });

describe('a charge journal entry as text', () => {
  it('reads back exactly the charges written: any names, amounts past 2^53 and 2^64, nulls, flags and times', () => {
    fc.assert(
      fc.property(fc.array(charge, { maxLength: 20 }), (charges) => {
        expect(journalEntryCharges(journalEntryText(charges))).toEqual(charges);
      }),
      { numRuns: 500 },
    );
  });

  it('reads the entries an earlier version wrote (a list of charge records)', () => {
    fc.assert(
      fc.property(fc.array(charge, { maxLength: 10 }), (charges) => {
        expect(journalEntryCharges(JSON.stringify(charges.map(toChargeRecord)))).toEqual(charges);
      }),
    );
  });

  it('writes the names a commit shares once: a commit of 16 charges of one key takes under a quarter of the old text', () => {
    const charges = Array.from({ length: 16 }, (_, i) => sample(i));
    const compact = journalEntryText(charges);
    expect(JSON.parse(compact)).toMatchObject({ v: 2, t: T0, s: ['acct_bench', 'k'.repeat(64), 'bench/paid', 'bench', 'stop', 'upstream'] });
    expect(compact.length * 4).toBeLessThan(JSON.stringify(charges.map(toChargeRecord)).length);
    expect(journalEntryCharges(compact)).toEqual(charges);
  });

  it('writes times whose differences are not safe integers as an earlier version did, and reads them back', () => {
    const charges = [sample(0, { createdAt: Number.MAX_SAFE_INTEGER }), sample(1, { createdAt: -Number.MAX_SAFE_INTEGER })];
    const written = journalEntryText(charges);
    expect(Array.isArray(JSON.parse(written))).toBe(true);
    expect(journalEntryCharges(written)).toEqual(charges);
  });

  it('refuses a text that is not an entry, naming what is wrong', () => {
    const good = JSON.parse(journalEntryText([sample(0)])) as { c: unknown[][] };
    const withRow = (row: unknown[]) => JSON.stringify({ ...good, c: [row] });
    const row = good.c[0] as unknown[];
    expect(() => journalEntryCharges('{"v":3}')).toThrow(/version 2/);
    expect(() => journalEntryCharges('{"v":2,"t":0}')).toThrow(/"t", "s" and "c"/);
    expect(() => journalEntryCharges(withRow(row.slice(0, 13)))).toThrow(/14 values/);
    expect(() => journalEntryCharges(withRow(row.map((v, i) => (i === 2 ? 99 : v))))).toThrow(/no string 99/);
    expect(() => journalEntryCharges(withRow(row.map((v, i) => (i === 9 ? 8 : v))))).toThrow(/flags/);
    expect(() => journalEntryCharges(withRow(row.map((v, i) => (i === 7 ? 1.5 : v))))).toThrow(/totalCost/);
    expect(() => journalEntryCharges(withRow(row.map((v, i) => (i === 5 ? -1 : v))))).toThrow(/tokensPrompt/);
  });
});
