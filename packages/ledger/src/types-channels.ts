// MPP payment channels (migration 0019, channels.ts): the types of `ledger.channels`.

/** `open`: vouchers accepted; `closing`: close_start seen on chain, no new vouchers; `closed`: closed or refunded on chain. */
export type ChannelState = 'open' | 'closing' | 'closed';

/** A one-way payment channel's state on chain, as the watcher reads it ({@link Ledger.channels}.upsert). */
export interface PaymentChannelInput {
  /** The channel contract (`C...`). */
  channel: string;
  /** CAIP-2 network, e.g. `stellar:testnet`. */
  network: string;
  /** The token contract (`C...`). */
  token: string;
  /** The agent that deposited (`G...` or `C...`). */
  funder: string;
  /** Who may withdraw: the treasury. */
  recipient: string;
  /** The Ed25519 public key that signs the vouchers, 64 hex characters (stored lower-case). */
  commitmentKey: string;
  /** Ledgers between a close_start and the funder's refund. */
  refundWaitingPeriod: number;
  /** The deposit (base units). Only grows: a lower value read later changes nothing. */
  deposited: bigint;
  /** The ledger from which a started close takes effect; null when no close was started. */
  closeEffectiveLedger?: number | null;
  /** Default `open`. The state only moves forward (`open` -> `closing` -> `closed`). */
  state?: ChannelState;
}

/** The voucher of the call in flight on a channel. */
export interface PendingVoucher {
  callId: string;
  /** The voucher's cumulative amount: the channel's paid plus the call's price. */
  amount: bigint;
  price: bigint;
  signature: string;
  service: string;
  publisherOwner: string;
  /** The end of its lease: after it, the next reservation voids it. */
  until: Date;
}

export interface PaymentChannel {
  channel: string;
  network: string;
  token: string;
  funder: string;
  recipient: string;
  commitmentKey: string;
  refundWaitingPeriod: number;
  deposited: bigint;
  closeEffectiveLedger: number | null;
  state: ChannelState;
  /** The cumulative amount of the last paid voucher (0 before the first): the next voucher is paid + price. */
  paid: bigint;
  /** That voucher's signature (null while nothing is paid): what the treasury settles with. */
  paidSignature: string | null;
  /** When the last voucher was paid. */
  paidAt: Date | null;
  /** The cumulative amount the treasury's settle and close transactions withdrew. */
  withdrawn: bigint;
  pending: PendingVoucher | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The voucher that pays one call ({@link Ledger.channels}.reserve). */
export interface ChannelVoucherInput {
  callId: string;
  /** The voucher's cumulative amount (base units). */
  amount: bigint;
  /** The call's price (base units): the voucher pays it only if `amount` is exactly the channel's paid plus `price`. */
  price: bigint;
  /** The voucher's signature (checked by the gateway). */
  signature: string;
  service: string;
  publisherOwner: string;
  /** How long the reservation holds the channel (ms, default 120 s); after it the next reservation voids it. */
  leaseMs?: number;
}

/**
 * Why a voucher pays no call: `unknown` channel; not `open` (`closed`: closing or closed); `replayed` (its amount is
 * the channel's paid) or `lowered` (below it); `over_deposit` (above the deposit); `wrong_amount` (not paid + price);
 * `busy` (another call's voucher is pending on the channel and its lease runs).
 */
export type ChannelRefusal = 'unknown' | 'closed' | 'replayed' | 'lowered' | 'over_deposit' | 'wrong_amount' | 'busy';

export type ChannelReserveResult =
  | {
      reserved: true;
      channel: PaymentChannel;
      /** The call whose pending voucher's lease had expired and which this reservation voided; null when none. */
      voided: string | null;
    }
  | {
      reserved: false;
      refused: ChannelRefusal;
      /** The channel's paid as it is now (0 for an unknown channel): the cumulative amount the client builds on. */
      paid: bigint;
      channel: PaymentChannel | null;
    };

/** A paid voucher (table `channel_payments`), with its earning. */
export interface ChannelPayment {
  id: string;
  channel: string;
  callId: string;
  /** The voucher's cumulative amount. */
  amount: bigint;
  /** The call's price: the earning's gross. */
  price: bigint;
  signature: string;
  service: string;
  publisherOwner: string;
  earningId: string;
  createdAt: Date;
}

export type ChannelPostResult = { applied: true; channel: PaymentChannel; payment: ChannelPayment } | { applied: false; channel: PaymentChannel | null };

export interface ChannelWithdrawalInput {
  /** The treasury's settle or close transaction (64 hex characters, stored lower-case). */
  txHash: string;
  channel: string;
  /** The cumulative amount the transaction settled (base units). */
  amount: bigint;
  kind: 'settle' | 'close';
}

export interface ChannelWithdrawal {
  txHash: string;
  channel: string;
  amount: bigint;
  kind: 'settle' | 'close';
  createdAt: Date;
}

/**
 * `recorded: true` the first time; a second record of the transaction writes nothing and returns the first
 * (`recorded: false`). Refused, nothing written: `unknown` channel, or `above_paid` (more than the channel's paid).
 */
export type ChannelWithdrawalResult =
  | { recorded: boolean; withdrawal: ChannelWithdrawal; channel: PaymentChannel }
  | { recorded: false; refused: 'unknown' | 'above_paid'; channel: PaymentChannel | null };

/** A channel the watcher has to act on: paid vouchers not all withdrawn, or a close started. */
export interface ChannelDue {
  channel: string;
  network: string;
  state: ChannelState;
  paid: bigint;
  paidSignature: string | null;
  withdrawn: bigint;
  closeEffectiveLedger: number | null;
  /** When the last voucher was paid (null: none). */
  paidAt: Date | null;
}
