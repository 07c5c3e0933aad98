/** The platform fee: 5 percent, in basis points. */
export const PLATFORM_FEE_BPS = 500n;
/** The platform fee in percent, as the escrow provider's `platformFee` and `fee.pct` carry it. */
export const PLATFORM_FEE_PCT = 5;
/**
 * The lowest price per call a service may set, base units: the smallest
 * amount whose 5 % fee, rounded down, is one base unit (20 x 5 % = 1). Below
 * it the platform's share of a call paid on its own (a direct or wallet-path
 * escrow, released per call) would round to nothing. Registration, updates,
 * the provider SDK's price and its quotes refuse less; a service registered
 * on chain for less before this rule is still listed and callable, and its
 * credit calls are settled with the fee on each batch's total
 * (docs/settlement.md).
 */
export const MIN_PRICE_BASE_UNITS = 20n;

export interface FeeSplit {
  /** Amount split, base units. */
  amount: bigint;
  /** Platform fee: floor(amount x bps / 10,000). */
  fee: bigint;
  /** Publisher's part: amount - fee. */
  net: bigint;
}

/**
 * Splits an amount into the platform fee and the publisher's net.
 *
 * Rounding rule (the one rule everywhere, also in the devnet escrow at
 * release): the fee is rounded down to the base unit, and the publisher gets
 * the rest, so `fee + net === amount` always holds and any fraction of a base
 * unit goes to the publisher.
 *
 * @example
 * splitFee(10_000_000n) // { amount: 10000000n, fee: 500000n, net: 9500000n }
 * splitFee(19n)         // { amount: 19n, fee: 0n, net: 19n }
 */
export function splitFee(amount: bigint, bps: bigint = PLATFORM_FEE_BPS): FeeSplit {
  if (amount < 0n) throw new RangeError('amount must not be negative');
  if (bps < 0n || bps > 10_000n) throw new RangeError('fee must be between 0 and 10000 basis points');
  const fee = (amount * bps) / 10_000n;
  return { amount, fee, net: amount - fee };
}
