/**
 * Money is exact: amounts are integer nanocredits (1e-9 credit) held in bigint, prices are integer
 * femtocredits (1e-15 credit) per unit. No binary float ever carries an amount.
 */
export type Nano = bigint;
/** Price per unit (token, request, image) in femtocredits. */
export type Femto = bigint;

export const NANO_DECIMALS = 9;
export const FEMTO_DECIMALS = 15;
const FEMTO_PER_NANO = 10n ** 6n;

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

export class MoneyFormatError extends Error {
  override readonly name = 'MoneyFormatError';
}

/** Parses a decimal string exactly into integer units with `decimals` places; rejects finer input. */
export function parseDecimal(text: string, decimals: number): bigint {
  const m = DECIMAL.exec(text.trim());
  if (!m) throw new MoneyFormatError(`"${text}" is not a decimal number`);
  const [, sign, whole, frac = ''] = m;
  if (frac.length > decimals) {
    throw new MoneyFormatError(`"${text}" has more than ${decimals} decimals`);
  }
  const units = BigInt(whole as string) * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, '0') || '0');
  return sign ? -units : units;
}

/**
 * A JSON number as received (already a double) to nanocredits. The double's shortest decimal form is
 * what the client wrote for any amount of at most 15 significant digits, so it is parsed from that.
 */
export function creditsFromJson(value: number): Nano {
  if (!Number.isFinite(value)) throw new MoneyFormatError('amount must be a finite number');
  let text = String(value);
  if (/e/i.test(text)) text = value.toFixed(20).replace(/\.?0+$/, '');
  return parseDecimal(text, NANO_DECIMALS);
}

export function creditsFromString(text: string): Nano {
  return parseDecimal(text, NANO_DECIMALS);
}

/** A number as written: JSON's form, and the forms a person types too (`+5`, `.5`, `5.`). */
const NUMBER_TEXT = /^([+-])?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/;
/** Exponents past this are refused rather than expanded (no amount within the contract needs one). */
const MAX_EXPONENT = 400;

/**
 * A number as written (JSON number text, or its decimal digits as a string) to nanocredits, exactly:
 * the exponent is applied to the digits, trailing zeros after the point do not count as decimals.
 */
export function creditsFromText(text: string): Nano {
  const m = NUMBER_TEXT.exec(text.trim());
  if (!m || (m[2] === '' && !m[3])) throw new MoneyFormatError(`"${text}" is not a decimal number`);
  const [, signed = '', whole = '', frac = '', exp = '0'] = m;
  const sign = signed === '-' ? '-' : '';
  const e = Number(exp);
  if (Math.abs(e) > MAX_EXPONENT) throw new MoneyFormatError(`"${text}" is out of range`);
  const digits = whole + frac;
  const point = whole.length + e;
  const int = point <= 0 ? '0' : digits.slice(0, point).padEnd(point, '0');
  const fraction = (point < 0 ? '0'.repeat(-point) + digits : digits.slice(Math.max(point, 0))).replace(/0+$/, '');
  return parseDecimal(`${sign}${int}${fraction ? `.${fraction}` : ''}`, NANO_DECIMALS);
}

export function priceFromString(text: string): Femto {
  return parseDecimal(text, FEMTO_DECIMALS);
}

/** 10^n for the decimals amounts are written with, computed once: a bigint power is dear a request. */
const SCALES = Array.from({ length: FEMTO_DECIMALS + 1 }, (_, n) => 10n ** BigInt(n));

export function formatUnits(units: bigint, decimals: number): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const scale = SCALES[decimals] ?? 10n ** BigInt(decimals);
  const whole = abs / scale;
  const frac = (abs % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${frac ? `.${frac}` : ''}`;
}

/** Exact decimal text of an amount, e.g. 1500n → "0.0000015". */
export function formatCredits(amount: Nano): string {
  return formatUnits(amount, NANO_DECIMALS);
}

export function formatPrice(price: Femto): string {
  return formatUnits(price, FEMTO_DECIMALS);
}

/** 2^53: every integer up to it is an exact double. */
const EXACT_DOUBLE = BigInt(Number.MAX_SAFE_INTEGER) + 1n;
const NANO_PER_CREDIT = 1e9;

/**
 * An amount as a JSON number for API answers. Every amount with at most 15 significant digits
 * (anything below a million credits at full precision) prints exactly; the ledger itself stays exact.
 */
export function creditsToJson(amount: Nano): number {
  // Within ±2^53 both the amount and 1e9 are exact doubles, and IEEE division rounds the exact
  // quotient to the nearest double, as parsing the exact decimal text does: the same number, without
  // the text (test/money.test.ts compares both ways).
  if (amount >= -EXACT_DOUBLE && amount <= EXACT_DOUBLE) return Number(amount) / NANO_PER_CREDIT;
  return Number(formatCredits(amount));
}

/** Femtocredits to nanocredits, rounding up: a charge never undercounts a fraction of a nanocredit. */
export function femtoToNanoCeil(femto: bigint): Nano {
  if (femto <= 0n) return femto / FEMTO_PER_NANO;
  return (femto + FEMTO_PER_NANO - 1n) / FEMTO_PER_NANO;
}
