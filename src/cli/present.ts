import { isJsonObject, type JsonObject } from '../json-object.js';

/**
 * What a CLI verb answers, for people: a list of records as an aligned table, one record as aligned
 * `field  value` lines, and an answer with a one-time secret (`{key, data}`) with the secret first.
 * `--json` prints the answer as the admin API gives it instead.
 */

type Row = JsonObject;

/** One value in a cell: scalars as they are, null as "-", anything nested as compact JSON. */
function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  return JSON.stringify(v);
}

/** Rows as a table: one column per field (in the order fields first appear), padded to its widest cell. */
export function table(rows: readonly Row[], columns?: readonly string[]): string {
  if (rows.length === 0) return '(none)';
  const cols = columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) => cols.map((c) => cell(r[c])));
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => (row[i] as string).length)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  return [line(cols.map((c) => c.toUpperCase())), ...cells.map(line)].join('\n');
}

/** One record as `field  value` lines. */
function record(r: Row): string {
  const width = Math.max(...Object.keys(r).map((k) => k.length));
  return Object.entries(r)
    .map(([k, v]) => `${k.padEnd(width)}  ${cell(v)}`)
    .join('\n');
}

/** An answer for people (see the file's comment). */
export function present(value: unknown): string {
  if (Array.isArray(value)) return table(value.filter(isJsonObject));
  if (!isJsonObject(value)) return cell(value);
  if ('data' in value) {
    const { data, ...rest } = value;
    const head = Object.entries(rest).map(([k, v]) => (k === 'key' ? `key (shown once, store it now): ${cell(v)}` : `${k}: ${cell(v)}`));
    return [...head, ...(head.length > 0 ? [''] : []), present(data)].join('\n');
  }
  return Object.keys(value).length === 0 ? '(empty)' : record(value);
}

/** Rows as CSV (RFC 4180): a header line, then one line per row; fields quoted when they need it. */
export function csv(rows: readonly Row[], columns?: readonly string[]): string {
  const cols = columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const field = (v: unknown) => {
    const s = v === null || v === undefined ? '' : cell(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [cols.join(','), ...rows.map((r) => cols.map((c) => field(r[c])).join(','))].join('\n');
}
