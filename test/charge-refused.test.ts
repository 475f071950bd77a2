import { describe, expect, it } from 'vitest';
import { isValueRefusal } from '../src/ledger/charge-refused.js';
import { ArrayElementError } from '../src/ledger/postgres-array.js';

const withCode = (code: string) => Object.assign(new Error('x'), { code });

describe('isValueRefusal: whether a failed write of charges failed on a value that could not be sent to its column', () => {
  it('is, for a value the driver cannot bind, one the array literals refuse, and a data exception', () => {
    expect(isValueRefusal(new RangeError('The bound string, buffer, or bigint is too big'))).toBe(true);
    const literal = new ArrayElementError(0, 'not an integer: 1.5');
    expect(isValueRefusal(literal)).toBe(true);
    expect(isValueRefusal(new TypeError('generation gen-1, column latency_ms: not an integer: 1.5', { cause: literal }))).toBe(true);
    for (const code of ['SQLITE_TOOBIG', 'SQLITE_MISMATCH', '22003', '22P02', '22001']) expect(isValueRefusal(withCode(code)), code).toBe(true);
  });

  it('is not, for a constraint or trigger (a rule every charge may break), nor for a database that fails every write', () => {
    for (const code of ['SQLITE_CONSTRAINT', 'SQLITE_CONSTRAINT_TRIGGER', 'SQLITE_CONSTRAINT_CHECK', '23505', '23514', 'P0001'])
      expect(isValueRefusal(withCode(code)), code).toBe(false);
    for (const code of ['SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_CORRUPT', 'SQLITE_BUSY', 'SQLITE_RANGE'])
      expect(isValueRefusal(withCode(code)), code).toBe(false);
    for (const code of ['53100', '25006', '42501', '57P01', '08006', 'ECONNRESET']) expect(isValueRefusal(withCode(code)), code).toBe(false);
  });

  it('is not, for a fault of the code or the connection that happens to be a TypeError or RangeError', () => {
    expect(isValueRefusal(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
    expect(isValueRefusal(new TypeError('The database connection is not open'))).toBe(false);
    expect(isValueRefusal(new RangeError('Too many parameter values were provided'))).toBe(false);
    expect(isValueRefusal(new Error('no code'))).toBe(false);
    expect(isValueRefusal('a string')).toBe(false);
    expect(isValueRefusal(undefined)).toBe(false);
  });
});
