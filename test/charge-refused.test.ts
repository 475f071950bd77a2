import { describe, expect, it } from 'vitest';
import { isValueRefusal } from '../src/ledger/charge-refused.js';

const withCode = (code: string) => Object.assign(new Error('x'), { code });

describe('isValueRefusal: whether a failed write of charges is about their values', () => {
  it('is, for what the driver cannot bind and for constraint and data errors of SQLite and PostgreSQL', () => {
    expect(isValueRefusal(new RangeError('The bound string, buffer, or bigint is too big'))).toBe(true);
    expect(isValueRefusal(new TypeError('generation gen-1, column total_cost: not a safe integer'))).toBe(true);
    for (const code of ['SQLITE_CONSTRAINT', 'SQLITE_CONSTRAINT_TRIGGER', 'SQLITE_CONSTRAINT_CHECK', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG', 'SQLITE_RANGE'])
      expect(isValueRefusal(withCode(code)), code).toBe(true);
    for (const code of ['22003', '22P02', '23505', '23514']) expect(isValueRefusal(withCode(code)), code).toBe(true);
  });

  it('is not, for a database that refuses or fails every write: full, read-only, failing, gone', () => {
    for (const code of ['SQLITE_FULL', 'SQLITE_READONLY', 'SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_CORRUPT', 'SQLITE_BUSY', 'SQLITE_CONSTRAINTX'])
      expect(isValueRefusal(withCode(code)), code).toBe(false);
    for (const code of ['53100', '25006', '42501', '57P01', '08006', 'ECONNRESET']) expect(isValueRefusal(withCode(code)), code).toBe(false);
    expect(isValueRefusal(new Error('no code'))).toBe(false);
    expect(isValueRefusal('a string')).toBe(false);
    expect(isValueRefusal(undefined)).toBe(false);
  });
});
