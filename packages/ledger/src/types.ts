import type { VerifyMismatch } from './types-verify.js';
import { BASE_UNITS_PER_USDC } from '@farebox/protocol';
import type { BatchOptions } from './batch.js';
import type { Budget } from './budgets.js';
import type { OpenDatabaseOptions, Queryable } from './db.js';

/** Sign-up credit: 5 USD, given once per account. */
export const SIGNUP_CREDIT = 5n * BASE_UNITS_PER_USDC;
/** Largest top-up per request: 1,000 USD. */
export const TOPUP_MAX = 1_000n * BASE_UNITS_PER_USDC;
/** Cap on aggregated credits (balance + active holds) reachable by top-ups: 10,000 USD. */
export const BALANCE_CAP = 10_000n * BASE_UNITS_PER_USDC;
/** Hold timeout when none is given: the reaper voids a pending hold after it. */
export const DEFAULT_HOLD_TIMEOUT_MS = 120_000;

/** The spec's messages, exactly. */
export const LEDGER_MESSAGES = {
  invalidTopup: 'invalid amount (must be 0 < n <= 1000)',
  balanceCap: 'balance cap exceeded (max $10000)',
  insufficientBalance: 'insufficient balance',
} as const;

export type HoldState = 'pending' | 'posted' | 'voided';
export type PaidWith = 'credit' | 'wallet';
/**
 * Status of a row of the transactions view:
 * - `pending`: a call's hold is placed and the call is in flight;
 * - `completed`: a call was posted (charged), or a top-up / sign-up credit was credited;
 * - `refunded`: a call's hold was voided (the service failed, timed out, or the reaper voided it) and the money is back in credits;
 * - `failed`: reserved for the wallet path, an on-chain payment that did not go through (nothing was charged).
 */
export type TransactionStatus = 'pending' | 'completed' | 'refunded' | 'failed';

export type CycleState = 'open' | 'closing' | 'deployed' | 'funded' | 'released' | 'swept' | 'done' | 'failed';
export const CYCLE_STATES: readonly CycleState[] = ['open', 'closing', 'deployed', 'funded', 'released', 'swept', 'done', 'failed'];

/** Allowed moves of a settlement cycle; any state but `done` may also move to `failed`. */
export const CYCLE_TRANSITIONS: Readonly<Record<CycleState, readonly CycleState[]>> = {
  open: ['closing', 'failed'],
  closing: ['deployed', 'done', 'failed'],
  deployed: ['funded', 'failed'],
  funded: ['released', 'failed'],
  released: ['swept', 'failed'],
  swept: ['done', 'failed'],
  done: [],
  failed: [],
};

export interface AccountBalance {
  accountId: string;
  /** Spendable credits. */
  balance: bigint;
  /** Sum of the account's pending holds. */
  held: bigint;
  /** balance + held: what the 10,000 USD cap applies to. */
  aggregated: bigint;
}

export interface Hold {
  id: string;
  accountId: string;
  amount: bigint;
  state: HoldState;
  callId: string;
  service: string;
  idempotencyKey: string | null;
  paidWith: PaidWith;
  postedAmount: bigint | null;
  voidReason: string | null;
  expiresAt: Date;
  createdAt: Date;
  resolvedAt: Date | null;
}

export interface HoldOptions {
  callId: string;
  service: string;
  /** Makes the hold idempotent: a live hold with this key is returned instead of a second debit. */
  idempotencyKey?: string;
  /** After this the reaper voids the hold if it is still pending (default {@link DEFAULT_HOLD_TIMEOUT_MS}). */
  timeoutMs?: number;
  /**
   * Counts the hold against a credential's budget (a spending policy's limit
   * for a period): in the same statement as the debit, `spent + held` of the
   * budget may not pass `limit`, else `BUDGET_EXCEEDED` and nothing moves.
   * Key-less ones are batched like other holds (budget-batch.ts). Its post moves the posted
   * amount to `spent`, its void (refund, reaper) gives it back.
   */
  budget?: import('./budgets.js').Budget;
}

export interface HoldResult {
  hold: Hold;
  /** Credits after the debit (or now, for a replay). */
  balance: bigint;
  /** True when an earlier hold with the same idempotency key was returned. */
  replayed: boolean;
}

export interface Earning {
  id: string;
  holdId: string;
  payerAccountId: string;
  publisherOwner: string;
  service: string;
  gross: bigint;
  fee: bigint;
  net: bigint;
  cycleId: string | null;
  fundingBatchId: string | null;
  createdAt: Date;
}

export interface PostOptions {
  /** The registry owner of the service: who is paid. */
  publisherOwner: string;
  service: string;
  /** Amount charged, at most the held amount; any remainder returns to credits. */
  gross: bigint;
}

export interface ResolveResult {
  hold: Hold;
  /** False when the hold was already posted or voided: nothing changed, `hold` shows the final state. */
  applied: boolean;
  /** Credits after the move. */
  balance: bigint;
  /** The publisher earning of a posted hold. */
  earning: Earning | null;
}

export interface TopupResult extends AccountBalance {
  amount: bigint;
  /** False when a top-up made `once` found its reference already credited (nothing changed). */
  applied: boolean;
}

export interface OpenAccountResult extends AccountBalance {
  /** True when this call created the account (and gave the sign-up credit). */
  created: boolean;
}

export interface LedgerTransaction {
  id: string;
  type: 'topup' | 'call';
  amount: bigint;
  service: string | null;
  txSignature: string | null;
  explorerUrl: string | null;
  status: TransactionStatus;
  paidWith: PaidWith | null;
  /** `signup` for the sign-up credit, the top-up reference, or null. */
  note: string | null;
  /** A call's id (the `callId` its answer and error name); null for a top-up. */
  callId: string | null;
  /** The idempotency key the call was made under, or null. */
  idempotencyKey: string | null;
  createdAt: Date;
}

export interface PublisherTotals {
  publisherOwner: string;
  calls: number;
  gross: bigint;
  fee: bigint;
  /** Earned, net of the fee. */
  earned: bigint;
  /** Net not yet paid out (no cycle, or a cycle before `swept`). */
  pending: bigint;
  /** Net paid out (cycle `swept` or `done`). */
  settled: bigint;
}

export interface AnalyticsPoint {
  /** UTC day, YYYY-MM-DD. */
  day: string;
  calls: number;
  gross: bigint;
  fee: bigint;
  /** Earned, net of the fee. */
  earned: bigint;
}

export interface ServiceStats {
  service: string;
  calls: number;
  gross: bigint;
  fee: bigint;
  earned: bigint;
}

export interface PlatformStats {
  accounts: number;
  calls: number;
  gross: bigint;
  /** Platform revenue: the fees. */
  fees: bigint;
  net: bigint;
  topups: bigint;
  signupCredits: bigint;
  credits: bigint;
  held: bigint;
}

export interface SettlementStep {
  fromState: CycleState;
  toState: CycleState;
  txHash: string | null;
  explorerUrl: string | null;
  createdAt: Date;
}

export interface FundingBatch {
  id: string;
  cycleId: string;
  amount: bigint;
  state: 'prepared' | 'confirmed';
  txHash: string | null;
  explorerUrl: string | null;
  createdAt: Date;
  confirmedAt: Date | null;
}

export interface SettlementCycle {
  id: string;
  publisherOwner: string;
  state: CycleState;
  escrowId: string | null;
  error: string | null;
  data: Record<string, unknown>;
  version: number;
  openedAt: Date;
  closedAt: Date | null;
  updatedAt: Date;
  /** Claimed earnings: count and gross / fee / net sums (gross is what the escrow must hold). */
  calls: number;
  gross: bigint;
  fee: bigint;
  net: bigint;
  /** Confirmed funding so far, and prepared but unconfirmed. */
  funded: bigint;
  fundingPrepared: bigint;
  /** gross - funded - fundingPrepared: claimed earnings in no batch yet. */
  unfunded: bigint;
  steps: SettlementStep[];
  batches: FundingBatch[];
}

/** A payment from an account's own wallet (the wallet path); see the `wallet_payments` table. */
export interface WalletPayment {
  id: string;
  accountId: string;
  kind: 'call' | 'topup';
  callId: string;
  service: string | null;
  publisherOwner: string | null;
  amount: bigint;
  state: 'pending' | 'completed' | 'failed';
  escrowId: string | null;
  txHash: string | null;
  explorerUrl: string | null;
  error: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
  resolvedAt: Date | null;
  /** The spending budget the payment is reserved against (migration 0014): settled when it resolves. */
  budget: { credential: string; period: string } | null;
}

export interface WalletPaymentInput {
  kind: 'call' | 'topup';
  /** Unique per account and kind: a second record with the same id returns the first. */
  callId: string;
  amount: bigint;
  service?: string;
  publisherOwner?: string;
  data?: Record<string, unknown>;
  /**
   * The credential budget the payment counts against (a spending policy): its amount is reserved in the statement
   * that records the payment (`BUDGET_EXCEEDED`, nothing recorded, when it does not fit) and spent or given back by
   * the transaction that resolves it.
   */
  budget?: Budget;
}

/** An x402 `exact` payment the platform's facilitator settled into the treasury (migration 0015), with its earning. */
export interface ExactPayment {
  /** The settled transaction (lower-case hex): one payment, and one earning, per transaction. */
  txHash: string;
  /** CAIP-2 network, e.g. `stellar:testnet`. */
  network: string;
  /** The token contract (`C...`). */
  asset: string;
  /** The address whose transfer it was. */
  payer: string;
  /** The treasury. */
  payTo: string;
  service: string;
  publisherOwner: string;
  /** What the transaction moved into the treasury (base units): the earning's gross. */
  amount: bigint;
  /** The network fee the facilitator paid (stroops). */
  feeCharged: bigint;
  earningId: string;
  /** Until when its earning is held back from settlement batches (a settle-first payment's refund window, schema 18); null: no hold. */
  holdUntil: Date | null;
  createdAt: Date;
}

export type ExactPaymentInput = Omit<ExactPayment, 'earningId' | 'createdAt' | 'holdUntil'> & {
  /** The nonce of the payer's authorization: the same statement closes its pending intent (`settled`, with this transaction). */
  intentNonce?: string;
  /** Holds the earning back from settlement batches for this long after the record (ms; a settle-first payment's refund window). */
  holdMs?: number | null;
};

/** The intent of an x402 `exact` settlement, written before anything moves (migration 0016); one per (payer, nonce). */
export interface ExactIntent {
  payer: string;
  /** The nonce of the payer's authorization (a signed 64-bit integer, as text). */
  nonce: string;
  /** The last ledger the authorization is valid in. */
  expirationLedger: number;
  /** The network's latest ledger when the intent was written: the transfer, if any, is in it or later. */
  startLedger: number;
  network: string;
  asset: string;
  payTo: string;
  service: string;
  publisherOwner: string;
  /** The amount the authorization pays (base units). */
  amount: bigint;
  /** The hold its payment's earning gets when recorded (ms; a settle-first payment's refund window), or null. */
  holdMs?: number | null;
  /** `pending` until resolved: `settled` (with `txHash`), `failed` (nothing moved; a later settle may open it again) or `never_settled` (expired unused). */
  state: 'pending' | 'settled' | 'failed' | 'never_settled';
  txHash: string | null;
  error: string | null;
  /** When the reconciler must have resolved it: `verify()` names an intent still pending after it. */
  resolveBy: Date;
  createdAt: Date;
  resolvedAt: Date | null;
}

export type ExactIntentInput = Omit<ExactIntent, 'state' | 'txHash' | 'error' | 'createdAt' | 'resolvedAt'>;

/** Network fees sponsored for one payer on one UTC day (stroops), and the settles they paid for. */
export interface SponsoredFees {
  total: bigint;
  settles: number;
}

export interface AdvanceData {
  txHash?: string;
  explorerUrl?: string;
  escrowId?: string;
  error?: string;
  /** Merged into the cycle's `data` object. */
  data?: Record<string, unknown>;
}

export interface AdvanceResult {
  applied: boolean;
  cycle: SettlementCycle;
}

export interface ClaimResult {
  claimed: number;
  gross: bigint;
  fee: bigint;
  net: bigint;
  /** With `batch: true`: the `prepared` funding batch of what was claimed (null when nothing was). */
  batch?: FundingBatch | null;
}

/** A credit that a wallet payment backs: its transaction's single claim (table `wallet_credits`). */
export interface WalletCredit {
  /** The order of the claims (the audit's cursor). */
  seq: bigint;
  txHash: string;
  paymentId: string;
  accountId: string;
  amount: bigint;
  createdAt: Date;
}

export interface VerifyReport {
  ok: boolean;
  accounts: number;
  holds: number;
  mismatches: VerifyMismatch[];
  /** Conservation: credited (sign-ups + top-ups) = credits + held + gross earnings of posted calls (an exact payment's earning came from no credits). */
  totals: { credited: bigint; credits: bigint; held: bigint; earned: bigint };
}

export interface IdempotencyOptions {
  /**
   * How long an attempt owns the key (its lease) before another may take
   * over (crash recovery). Default 60 s. The lease of an instance that died
   * ends sooner: when a live one gives back what it held (`Ledger.reapDeadInstances`).
   */
  leaseMs?: number;
  /** How long a concurrent duplicate waits for the first to finish; 0 (default) refuses at once with IDEMPOTENCY_IN_PROGRESS. */
  waitMs?: number;
}

/** What `fn` of {@link Ledger.withIdempotency} may say of its own attempt. */
export interface IdempotencyClaim<T> {
  /**
   * The attempt's outcome is known only later (its charge waits for the
   * database to come back). When `fn` then throws, the key stays claimed
   * instead of being released; once `outcome` resolves, its value is stored
   * as the key's response (a retry gets it, `replayed`), or, when it resolves
   * `undefined` or rejects, the key is released and a retry runs anew. Only
   * this attempt's claim is touched: a retry that took the key over after
   * the lease keeps it.
   */
  later(outcome: Promise<T | undefined>): void;
}

export interface IdempotentResult<T> {
  response: T;
  /** True when the stored response of an earlier attempt was returned and `fn` did not run. */
  replayed: boolean;
}

export interface LedgerOptions {
  /** Group commit of holds and posts (default on); `false` sends each alone. */
  batch?: boolean | BatchOptions;
  /** Credits a new account starts with (base units, default {@link SIGNUP_CREDIT}; 0 for none). */
  signupCredit?: bigint;
  /**
   * The host's clock, epoch ms (default the machine's). A hold's expiry and
   * an idempotency key's lease are stamped and compared by the database's
   * time (one clock for every process on the database), moved by how far
   * this clock runs ahead of the machine's: a host whose clock a test moves
   * sees its holds age and its leases end with it. A duplicate's `waitMs`
   * and the time an unwritten outcome is asked again are measured by it.
   * With the default clock nothing moves (clock.ts).
   */
  now?: () => number;
  /** Code the host runs inside the ledger's transactions, once per change applied (see {@link LedgerHooks}). */
  hooks?: LedgerHooks;
}

/**
 * Code a host runs inside the ledger's own transactions, once per change
 * applied (the gateway writes its webhook outbox there): what a hook writes
 * commits with the change or rolls back with it, so a crash neither loses
 * nor invents the host's record of it. A hook that throws fails the change.
 */
export interface LedgerHooks {
  /** A top-up credited (`topup`, or a wallet top-up's payment completed): in the crediting transaction. */
  topupCredited?(tx: Queryable, topup: CreditedTopup): Promise<void>;
  /** A settlement cycle moved from one state to another (`advance`): in the transaction of the move. */
  cycleMoved?(tx: Queryable, move: CycleMove): Promise<void>;
}

/** A top-up as {@link LedgerHooks.topupCredited} sees it. */
export interface CreditedTopup {
  accountId: string;
  amount: bigint;
  /** The journal row's reference (`free:<...>` for the gateway's free top-ups, `wallet:<tx hash>` for wallet ones). */
  reference: string | null;
  /** The account's credits after the top-up. */
  balance: bigint;
  /** The wallet payment it credits (completed), or null for a top-up that is not paid on chain. */
  payment: WalletPayment | null;
}

/** A state move as {@link LedgerHooks.cycleMoved} sees it (the `advance` call's data). */
export interface CycleMove {
  cycleId: string;
  from: CycleState;
  to: CycleState;
  txHash: string | null;
  explorerUrl: string | null;
  escrowId: string | null;
  error: string | null;
  /** What the move merged into the cycle's `data`. */
  data: Record<string, unknown>;
}

export type OpenLedgerOptions = OpenDatabaseOptions & LedgerOptions;

export type * from './types-channels.js';
export type * from './types-verify.js';
