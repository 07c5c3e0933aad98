// What `verify()` reports (verify.ts).

/** The kinds of {@link VerifyMismatch}. */
export type VerifyKind =
  | 'balance'
  | 'hold'
  | 'earning'
  | 'reference'
  | 'cycle'
  | 'wallet-credit'
  | 'exact-payment'
  | 'exact-intent'
  | 'exact-refund'
  | 'channel-payment'
  | 'channel'
  | 'conservation';

export interface VerifyMismatch {
  /**
   * `wallet-credit`: a credit for a wallet payment that is not backed by exactly one claimed transaction (`id` is the
   * transaction hash or the payment id). `exact-payment`: an x402 `exact` payment without exactly its one earning
   * (`id` is the transaction hash); `exact-intent`: a settlement intent still pending past its `resolveBy` (`id` is
   * `payer/nonce`). `channel-payment`: a paid voucher without exactly its one earning (`id`: the payment's);
   * `channel`: a channel whose payments do not add up to its paid amount, or whose withdrawn passes it.
   */
  kind: VerifyKind;
  id: string;
  expected: string;
  actual: string;
}
