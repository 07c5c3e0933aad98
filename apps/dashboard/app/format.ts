/** Pure helpers shared by the pages: amounts, dates, input checks. No DOM here. */

export const BASE_UNITS_PER_USDC = 10_000_000n;
export const TOPUP_MAX_USD = 1000;
export const CREDITS_CAP_USD = 10_000;
export const TOPUP_RANGE_MESSAGE = 'invalid amount (must be 0 < n <= 1000)';
export const TOPUP_CAP_MESSAGE = 'balance cap exceeded (max $10000)';

function trim(fixed: string): string {
  const [int = '0', frac = ''] = fixed.split('.');
  const cut = frac.replace(/0+$/, '');
  return `${int}.${cut.padEnd(2, '0')}`;
}

/** Formats base units (1 USDC = 10,000,000) as USD with up to 7 decimals, trailing zeros trimmed (at least 2). */
export function formatBaseUnits(units: number | string | bigint): string {
  const n = BigInt(units);
  const neg = n < 0n;
  const abs = neg ? -n : n;
  const int = (abs / BASE_UNITS_PER_USDC).toLocaleString('en-US');
  const frac = (abs % BASE_UNITS_PER_USDC).toString().padStart(7, '0');
  return `${neg ? '-' : ''}$${trim(`${int}.${frac}`)}`;
}

/** Formats a USD number with up to 7 decimals, trailing zeros trimmed (at least 2). */
export function formatUsd(usd: number): string {
  if (!Number.isFinite(usd)) return '—';
  return formatBaseUnits(BigInt(Math.round(usd * 1e7)));
}

/**
 * Parses a USDC amount typed by a person into base units, exactly (no float
 * rounding). Returns an error message instead when the text is not a positive
 * amount with at most 7 decimals.
 */
export function parseUsdc(text: string): { units: bigint } | { error: string } {
  const t = text.trim();
  if (!/^\d+(\.\d+)?$/.test(t)) return { error: 'enter an amount in USDC, like 0.01' };
  const [int = '0', frac = ''] = t.split('.');
  if (frac.length > 7) return { error: 'at most 7 decimals (1 USDC = 10,000,000 base units)' };
  const units = BigInt(int) * BASE_UNITS_PER_USDC + BigInt(frac.padEnd(7, '0') || '0');
  if (units <= 0n) return { error: 'the price must be more than 0' };
  if (units > BigInt(Number.MAX_SAFE_INTEGER)) return { error: 'the price is too large' };
  return { units };
}

/** Checks a top-up before it is sent, with the gateway's own messages. */
export function checkTopup(text: string, creditsUsd: number | undefined): { amount: number } | { error: string } {
  const t = text.trim();
  const amount = Number(t);
  if (t === '' || !Number.isFinite(amount) || amount <= 0 || amount > TOPUP_MAX_USD) return { error: TOPUP_RANGE_MESSAGE };
  if (creditsUsd !== undefined && creditsUsd + amount > CREDITS_CAP_USD) return { error: TOPUP_CAP_MESSAGE };
  return { amount };
}

/** Parses the "try it" payload: a JSON object, or an error message saying what is wrong. */
export function parsePayload(text: string): { payload: Record<string, unknown> } | { error: string } {
  if (text.trim() === '') return { payload: {} };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `the payload is not valid JSON: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { error: 'the payload must be a JSON object, like {"text": "hello"}' };
  return { payload: value as Record<string, unknown> };
}

/** A short date and time in the reader's locale. */
export function formatDate(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '—';
  const d = typeof value === 'number' ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  if (Number.isNaN(d.getTime())) return '—';
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

/** `GAAA…ZZZZ` for long addresses and hashes. */
export function shorten(s: string, keep = 6): string {
  return s.length <= keep * 2 + 1 ? s : `${s.slice(0, keep)}…${s.slice(-keep)}`;
}

/** `1 call`, `3 calls`. */
export function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

const AMOUNT_KEYS = new Set(['amount', 'floor', 'price', 'quoted', 'refund', 'held', 'cost']);

/** A step's detail as short `key value` pairs: amounts in USD, addresses shortened. */
export function describeDetail(detail: unknown): string {
  if (detail === null || detail === undefined) return '';
  if (typeof detail !== 'object') return String(detail);
  return Object.entries(detail as Record<string, unknown>)
    .map(([k, v]) => {
      let text = typeof v === 'string' ? v : JSON.stringify(v);
      if (AMOUNT_KEYS.has(k) && (typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v)))) text = formatBaseUnits(v);
      else if (typeof v === 'string' && /^[GC][A-Z2-7]{55}$/.test(v)) text = shorten(v);
      return `${k} ${text}`;
    })
    .join(' · ');
}
