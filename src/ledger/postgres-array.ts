/** An element an array literal cannot hold: which one (`index`), and why. */
export class ArrayElementError extends TypeError {
  constructor(
    readonly index: number,
    message: string,
  ) {
    super(message);
  }
}

/** What, inside a quoted element of a PostgreSQL array literal, must be escaped with a backslash. */
const ESCAPED = /["\\]/;
const ESCAPED_ALL = /["\\]/g;

/**
 * An array of texts as PostgreSQL's array literal (`{"a","b",NULL}`), for a `$n::text[]` parameter:
 * each element quoted, a `"` or `\` in it escaped with a backslash, null and undefined as NULL, any
 * other non-string refused (ArrayElementError, naming its type). What node-postgres would send for the array itself,
 * built without its two regular-expression replaces an element, which were most of what a group
 * commit's parameters cost this process (bench/README.md, twentieth session).
 */
export function textArrayLiteral(values: readonly (string | null | undefined)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v !== 'string') throw new ArrayElementError(i, `not a text for a PostgreSQL text array: ${typeof v}`);
    else if (ESCAPED.test(v)) out += `"${v.replace(ESCAPED_ALL, '\\$&')}"`;
    else out += `"${v}"`;
  }
  return `${out}}`;
}

/**
 * An array of integers (numbers or bigints, exact) as PostgreSQL's array literal (`{1,-2,NULL}`), for
 * a `$n::integer[]` or `$n::bigint[]` parameter; null and undefined as NULL. A number that is not an
 * integer is refused here (ArrayElementError, naming it), rather than by the database.
 */
export function integerArrayLiteral(values: readonly (number | bigint | null | undefined)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += ',';
    if (v === null || v === undefined) out += 'NULL';
    else if (typeof v === 'bigint' || Number.isSafeInteger(v)) out += String(v);
    else throw new ArrayElementError(i, `not an integer for a PostgreSQL integer array: ${String(v)}`);
  }
  return `${out}}`;
}
