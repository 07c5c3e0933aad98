import { z } from 'zod';

/** The building blocks of the response schemas (schemas.ts, operator-schemas.ts); not exported from the package. */

/** Base units (1 USDC = 10,000,000), as JSON numbers within 2^53. */
export const BaseUnits = z.number().int();
/** A timestamp, ISO 8601 in UTC. */
export const Timestamp = z.string().meta({ format: 'date-time' });
/** A Stellar account address (`G...`). */
export const Address = z.string();

/**
 * The five twins of an amount: `<p>_base_units` and the legacy `<p>_lamports`
 * and `<p>_sol` (the same base units, the spec's Versioning rule 2),
 * `<p>_asset_amount` (USDC) and `<p>_usd`.
 */
export function amountFields<P extends string>(prefix: P) {
  return {
    [`${prefix}_base_units`]: BaseUnits,
    [`${prefix}_lamports`]: BaseUnits,
    [`${prefix}_asset_amount`]: z.number(),
    [`${prefix}_sol`]: BaseUnits,
    [`${prefix}_usd`]: z.number(),
  } as Record<`${P}_base_units` | `${P}_lamports` | `${P}_sol`, typeof BaseUnits> & Record<`${P}_asset_amount` | `${P}_usd`, z.ZodNumber>;
}
