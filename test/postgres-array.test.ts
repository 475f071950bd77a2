import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Charge } from '../src/ledger/ledger.js';
import { integerArrayLiteral, textArrayLiteral } from '../src/ledger/postgres-array.js';
import { postgresCommitWriter } from '../src/ledger/postgres-commit-writer.js';
import { chargeMaker } from './helpers/charges.js';

describe('PostgreSQL array literals', () => {
  it('quote every text, escape " and \\ in it, and write null as NULL', () => {
    expect(textArrayLiteral([])).toBe('{}');
    expect(textArrayLiteral(['gen-1', '', null, undefined, 'NULL', 'a,b{c}'])).toBe('{"gen-1","",NULL,NULL,"NULL","a,b{c}"}');
    expect(textArrayLiteral(['say "hi"', 'C:\\dir\\', '\\"'])).toBe('{"say \\"hi\\"","C:\\\\dir\\\\","\\\\\\""}');
  });

  it('refuse a text element that is not a string, naming its type', () => {
    expect(() => textArrayLiteral([{} as never])).toThrow(/not a text.*object/);
    expect(() => textArrayLiteral([12 as never])).toThrow(/not a text.*number/);
  });

  it('a group commit refuses a charge it cannot write, naming its generation and column, before it reaches the database', async () => {
    const bad: Charge = {
      ...chargeMaker('pgarr', Date.UTC(2026, 10, 27))('acct_1', 'k'.repeat(64), 5n, Date.UTC(2026, 10, 27)),
      id: 'gen-bad',
      latencyMs: 1.5,
    };
    const noDatabase = undefined as never; // never reached: the parameters are refused first
    await expect(postgresCommitWriter.write(noDatabase, [bad], [])).rejects.toThrow(/generation gen-bad, column latency_ms: not an integer .*1\.5/);
  });

  it('write integers and bigints exactly, and refuse a number that is not an integer', () => {
    expect(integerArrayLiteral([0, -1, 2 ** 53 - 1, null, 2n ** 63n - 1n, -(2n ** 63n)])).toBe(
      '{0,-1,9007199254740991,NULL,9223372036854775807,-9223372036854775808}',
    );
    expect(() => integerArrayLiteral([1.5])).toThrow(/not an integer.*1\.5/);
    expect(() => integerArrayLiteral([Number.NaN])).toThrow(/not an integer/);
    expect(() => integerArrayLiteral([2 ** 53])).toThrow(/not an integer/);
  });
});

// What PostgreSQL reads from them, against node-postgres's own conversion of the same arrays.
const url = process.env.DATABASE_URL;
describe.skipIf(!url)('PostgreSQL array literals, read by PostgreSQL', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
  });

  // PostgreSQL's text holds no NUL, and a lone surrogate has no UTF-8 form: neither can reach it either way.
  const storableText = fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('\u0000'));
  const tricky = fc.constantFrom('', 'NULL', 'null', ' x ', '"', '\\', '{', '}', ',', '\\"', 'a"b\\c', 'é€😀');

  it('read back every text array as it was, as node-postgres would send it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(fc.oneof(storableText, tricky), { nil: null }), { maxLength: 20 }), async (values) => {
        const { rows } = await client.query<{ ours: (string | null)[]; same: boolean }>('SELECT $1::text[] AS ours, $1::text[] = $2::text[] AS same', [
          textArrayLiteral(values),
          values,
        ]);
        expect(rows[0]?.ours).toEqual(values);
        expect(rows[0]?.same).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('read back every bigint array as it was', async () => {
    const int8 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(fc.oneof(int8, fc.maxSafeInteger().map(BigInt)), { nil: null }), { maxLength: 20 }), async (values) => {
        const { rows } = await client.query<{ ours: (string | null)[] }>('SELECT $1::bigint[]::text[] AS ours', [integerArrayLiteral(values)]);
        expect(rows[0]?.ours).toEqual(values.map((v) => (v === null ? null : v.toString())));
      }),
      { numRuns: 200 },
    );
  });

  it('read integer arrays for integer columns', async () => {
    const { rows } = await client.query<{ ours: number[] }>('SELECT $1::integer[] AS ours', [integerArrayLiteral([0, 1, -2147483648, 2147483647])]);
    expect(rows[0]?.ours).toEqual([0, 1, -2147483648, 2147483647]);
  });
});
