import { isPair, isScalar, isSeq, visit, type Document } from 'yaml';

/** A decimal number as written: sign, whole digits, fraction digits, exponent. */
const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;

/**
 * `n` in plain decimal digits, with no exponent: the digits of its shortest form (`String(n)`, which
 * writes 0.0000005 as `5e-7`) with the point moved. So a price or an amount written as a YAML number
 * is checked as it was written, where `String` alone gave a form the checks refuse.
 */
export function decimalText(n: number): string {
  const text = String(n);
  const m = DECIMAL.exec(text);
  if (!m || m[4] === undefined) return text;
  const [, sign = '', whole = '', frac = ''] = m;
  const digits = whole + frac;
  const point = whole.length + Number(m[4]);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/** The decimals of `n` as written in plain digits (0.0000005: 7). */
export function decimalsOf(n: number): number {
  const point = decimalText(n).indexOf('.');
  return point < 0 ? 0 : decimalText(n).length - point - 1;
}

/** A decimal text's value as `digits e exponent`, without the zeros that change nothing; undefined for any other text. */
function canonical(text: string): string | undefined {
  const m = DECIMAL.exec(text);
  if (!m || (m[2] === '' && !m[3])) return undefined;
  const [, sign = '', whole = '', frac = '', exp = '0'] = m;
  let digits = (whole + frac).replace(/^0+/, '');
  let e = Number(exp) - frac.length;
  const trailing = /0*$/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(0, digits.length - trailing);
  e += trailing;
  return digits === '' ? '0' : `${sign === '-' ? '-' : ''}${digits}e${e}`;
}

/**
 * The numbers of a YAML document written with more digits than a number holds
 * (`0.10000000000000000001` reads as 0.1): where each is, and what was written. A config that holds
 * one is refused, rather than taken as a number its author did not write.
 */
export function inexactNumbers(doc: Document): Array<{ path: string; written: string }> {
  const found: Array<{ path: string; written: string }> = [];
  visit(doc, {
    Scalar(_key, node, ancestors) {
      if (typeof node.value !== 'number' || node.source === undefined) return;
      const written = canonical(node.source);
      if (written === undefined || written === canonical(String(node.value))) return;
      const path: string[] = [];
      let child: unknown = node;
      for (let i = ancestors.length - 1; i >= 0; i--) {
        const a = ancestors[i];
        if (isPair(a)) {
          if (a.value !== child) return; // a key, not a value
          path.unshift(isScalar(a.key) ? String(a.key.value) : '?');
        } else if (isSeq(a)) path.unshift(String(a.items.indexOf(child as never)));
        child = a;
      }
      found.push({ path: path.join('.'), written: node.source });
    },
  });
  return found;
}
