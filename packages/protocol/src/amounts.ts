import { FareboxError } from './errors.js';

/** Decimal places of USDC on Stellar. */
export const USDC_DECIMALS = 7;
/** 1 USDC = 10,000,000 base units (stroops). */
export const BASE_UNITS_PER_USDC = 10_000_000n;
/** Name the API gives the base unit. */
export const BASE_UNIT_NAME = 'stroops';
/** Largest amount accepted anywhere: the range of a PostgreSQL BIGINT / Stellar int64. */
export const MAX_BASE_UNITS = 2n ** 63n - 1n;

const DECIMAL = /^(\d+)(?:\.(\d*))?$/;

function invalid(message: string, input: unknown): never {
  throw new FareboxError('INVALID_AMOUNT', message, { input: String(input) });
}

/** Plain decimal notation of a finite JS number, without exponent. */
function numberToDecimal(n: number): string {
  if (!Number.isFinite(n)) invalid('amount is not a finite number', n);
  const s = String(n);
  if (!/e/i.test(s)) return s;
  // Exponent form (1e-7, 1e+21): let toFixed/BigInt expand it exactly enough
  // to judge the decimals; 20 places covers every 7-decimal amount.
  if (Math.abs(n) >= 1e21) return BigInt(Math.trunc(n)).toString();
  return n.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}

/**
 * Parses a decimal USD/USDC amount ("1.25", 1.25) into base units.
 * Rejects NaN, infinities, negatives, more than 7 decimals and amounts past
 * {@link MAX_BASE_UNITS}. Zero is allowed; callers that need a positive
 * amount check it.
 *
 * @example
 * parseAmount('0.0000001') // 1n
 * parseAmount(5) // 50_000_000n
 */
export function parseAmount(input: string | number): bigint {
  let text: string;
  if (typeof input === 'number') {
    if (Number.isNaN(input)) invalid('amount is NaN', input);
    text = numberToDecimal(input);
  } else if (typeof input === 'string') {
    text = input.trim();
  } else {
    return invalid('amount must be a string or a number', input);
  }
  if (text.startsWith('-')) invalid('amount must not be negative', input);
  if (text.startsWith('+')) text = text.slice(1);
  const m = DECIMAL.exec(text);
  if (!m) return invalid('amount is not a decimal number', input);
  const whole = m[1] ?? '0';
  const frac = m[2] ?? '';
  if (frac.length > USDC_DECIMALS) invalid(`amount has more than ${USDC_DECIMALS} decimals`, input);
  const units = BigInt(whole) * BASE_UNITS_PER_USDC + BigInt(frac.padEnd(USDC_DECIMALS, '0') || '0');
  if (units > MAX_BASE_UNITS) invalid('amount is too large', input);
  return units;
}

/**
 * Formats base units as a decimal string with exactly 7 decimals, the form
 * Stellar uses for classic amounts ("1.2500000").
 * With `{ trim: true }` trailing zeros are dropped ("1.25", "5").
 */
export function formatAmount(units: bigint, options: { trim?: boolean } = {}): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const whole = abs / BASE_UNITS_PER_USDC;
  const frac = (abs % BASE_UNITS_PER_USDC).toString().padStart(USDC_DECIMALS, '0');
  let text = `${whole}.${frac}`;
  if (options.trim) text = text.replace(/0+$/, '').replace(/\.$/, '');
  return negative ? `-${text}` : text;
}

/** Base units as a JS number of USD/USDC, for JSON fields such as `balance_usd`. */
export function toUsd(units: bigint): number {
  return Number(formatAmount(units));
}

/**
 * Base units as a JSON integer. Every amount Farebox handles is far below
 * 2^53 base units (900 million USDC); anything above is refused rather than
 * silently rounded.
 */
export function toJsonInteger(units: bigint): number {
  if (units > BigInt(Number.MAX_SAFE_INTEGER) || units < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new FareboxError('INVALID_AMOUNT', 'amount exceeds the JSON integer range', { units: units.toString() });
  }
  return Number(units);
}

/**
 * Parses a base-unit integer (a JSON number or a digit string) into a bigint.
 * Rejects fractions, negatives, non-numbers and values past the int64 range.
 */
export function parseBaseUnits(input: unknown): bigint {
  let units: bigint;
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input)) invalid('base units must be an integer', input);
    units = BigInt(input);
  } else if (typeof input === 'string' && /^-?\d+$/.test(input.trim())) {
    units = BigInt(input.trim());
  } else if (typeof input === 'bigint') {
    units = input;
  } else {
    return invalid('base units must be an integer', input);
  }
  if (units < 0n) invalid('amount must not be negative', input);
  if (units > MAX_BASE_UNITS) invalid('amount is too large', input);
  return units;
}

/**
 * The amount fields the API returns for one quantity, with the legacy twins:
 * `{prefix}_base_units` and its legacy twins `{prefix}_lamports` and
 * `{prefix}_sol` carry the base units (the spec's Versioning rule 2),
 * `{prefix}_asset_amount` the value in USDC, and `{prefix}_usd` the value in
 * USD (1 USDC = 1 USD).
 *
 * @example
 * amountFields('wallet', 12_500_000n)
 * // { wallet_base_units: 12500000, wallet_lamports: 12500000,
 * //   wallet_asset_amount: 1.25, wallet_sol: 12500000, wallet_usd: 1.25 }
 */
export function amountFields<P extends string>(
  prefix: P,
  units: bigint,
): Record<`${P}_base_units` | `${P}_lamports` | `${P}_asset_amount` | `${P}_sol` | `${P}_usd`, number> {
  const n = toJsonInteger(units);
  const usd = toUsd(units);
  return {
    [`${prefix}_base_units`]: n,
    [`${prefix}_lamports`]: n,
    [`${prefix}_asset_amount`]: usd,
    [`${prefix}_sol`]: n,
    [`${prefix}_usd`]: usd,
  } as Record<`${P}_base_units` | `${P}_lamports` | `${P}_asset_amount` | `${P}_sol` | `${P}_usd`, number>;
}

/** `{ lamports, usd }`, the shape of `cost` and `newBalance` in a call result. */
export function costObject(units: bigint): { lamports: number; base_units: number; usd: number } {
  const n = toJsonInteger(units);
  return { lamports: n, base_units: n, usd: toUsd(units) };
}
