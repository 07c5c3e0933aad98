import { BASE_UNITS_PER_USDC, formatAmount, parseAmount } from './amounts.js';
import { FareboxError } from './errors.js';

// A price per call, as publishers write it: USDC, a decimal string ('0.002'). What a newcomer may write instead
// (base units as a number, a dollar sign, an amount a thousand times too high) is refused with the unit and an example.

/** The price per call above which a price is refused unless the publisher raises the bound explicitly: 100 USDC. */
export const PRICE_BOUND_BASE_UNITS = 100n * BASE_UNITS_PER_USDC;

/** The example every price message shows. */
export const PRICE_EXAMPLE = "'0.002'";

export interface PriceRules {
  /** How the price is named in the message: `pricePerCall`, `--price`. */
  field: string;
  /** The highest price accepted (base units); default {@link PRICE_BOUND_BASE_UNITS}. */
  max?: bigint;
  /** How to raise the bound, e.g. `maxPricePerCall: '500'` or `--max-price 500`: `{}` stands for the price. */
  raise: string;
}

function refuse(message: string, input: unknown): never {
  throw new FareboxError('INVALID_AMOUNT', message, { input: String(input) });
}

/**
 * A price per call in USDC to base units. Accepted: a decimal string (`'0.002'`) or a number that cannot be
 * base units (`0.002`, `5`). Refused, naming the unit and an example: a whole number of 20 or more (`20000`,
 * base units written where USDC is meant), a currency sign (`'$0.002'`), what is not a decimal amount, and a
 * price over `max` (100 USDC unless raised).
 */
export function parsePrice(input: unknown, rules: PriceRules): bigint {
  const { field } = rules;
  const max = rules.max ?? PRICE_BOUND_BASE_UNITS;
  if (typeof input === 'number' && Number.isInteger(input) && input >= 20) {
    const asUnits = BigInt(input);
    refuse(
      `${field} ${input} looks like base units: a price is USDC, written as a decimal string, e.g. ${PRICE_EXAMPLE} (0.002 USDC = 20000 base units); ${input} base units is '${formatAmount(asUnits, { trim: true })}'`,
      input,
    );
  }
  if (typeof input === 'string' && /^\s*[$€£]|usdc?\s*$|\$\s*$/i.test(input)) {
    refuse(`${field} ${JSON.stringify(input)}: write the USDC amount alone, as a decimal string, e.g. ${PRICE_EXAMPLE} (no currency sign or unit)`, input);
  }
  let units: bigint;
  try {
    units = parseAmount(input as string | number);
  } catch (e) {
    return refuse(`${field} ${JSON.stringify(input)}: ${(e as Error).message}; a price is USDC as a decimal string, e.g. ${PRICE_EXAMPLE}`, input);
  }
  if (units > max) {
    const text = formatAmount(units, { trim: true });
    refuse(
      `${field} ${JSON.stringify(input)} is ${text} USDC per call, over the bound of ${formatAmount(max, { trim: true })} USDC: a price is USDC, e.g. ${PRICE_EXAMPLE}; to charge ${text} USDC per call, raise the bound (${rules.raise.replace('{}', text)})`,
      input,
    );
  }
  return units;
}
