import { MIN_PRICE_BASE_UNITS, PRICE_BOUND_BASE_UNITS, formatAmount, parseAmount, parsePrice } from '@farebox/protocol';
import type { z } from 'zod';
import { GatewayError } from '../errors.js';

/** The message zod gives a strict object for a field it does not know. */
export const unknownField = (iss: { code?: string; keys?: readonly string[] }): string | undefined =>
  iss.code === 'unrecognized_keys' ? `unknown field: ${(iss.keys ?? []).join(', ')}` : undefined;

/** Parses a request body; the first problem is the `400` answer. */
export function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
  return r.data;
}

/**
 * The price of a register or update body in base units (undefined when neither field is given): `price`, USDC as a
 * decimal string, or `pricePerCallLamports`; over 100 USDC only with `maxPrice` (a likely unit mistake otherwise).
 */
export function priceOfBody(b: { price?: string | undefined; pricePerCallLamports?: number | undefined; maxPrice?: string | undefined }): bigint | undefined {
  let max: bigint | undefined;
  try {
    if (b.maxPrice !== undefined) max = parseAmount(b.maxPrice);
  } catch (e) {
    throw new GatewayError('BAD_REQUEST', `maxPrice ${JSON.stringify(b.maxPrice)}: ${(e as Error).message}`);
  }
  const rules = { raise: "maxPrice: '{}'", ...(max === undefined ? {} : { max }) };
  try {
    if (b.price !== undefined) {
      const units = parsePrice(b.price, { field: 'price', ...rules });
      if (units < MIN_PRICE_BASE_UNITS)
        throw new Error(
          `price ${JSON.stringify(b.price)} must be at least 0.000002 USDC (20 base units), so that the 5 % platform fee of a call is at least one base unit`,
        );
      return units;
    }
    // Base units say their unit; the bound still catches a price a thousand times too high.
    if (b.pricePerCallLamports !== undefined) {
      const units = BigInt(b.pricePerCallLamports);
      const bound = max ?? PRICE_BOUND_BASE_UNITS;
      const usdc = formatAmount(units, { trim: true });
      if (units > bound)
        throw new Error(
          `pricePerCallLamports ${units} is ${usdc} USDC per call, over the bound of ${formatAmount(bound, { trim: true })} USDC (base units: 0.002 USDC is 20000); to charge ${usdc} USDC per call, raise the bound (maxPrice: '${usdc}')`,
        );
      return units;
    }
  } catch (e) {
    throw new GatewayError('BAD_REQUEST', (e as Error).message);
  }
  return undefined;
}
