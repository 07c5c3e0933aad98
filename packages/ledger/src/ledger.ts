import type { Database, Queryable } from './db.js';
import * as accounts from './accounts.js';
import * as budgets from './budgets.js';
import * as channels from './channels.js';
import type { ChannelsApi } from './channels.js';
import * as exactIntents from './exact-intents.js';
import * as exactPayments from './exact-payments.js';
import * as funding from './funding.js';
import { HoldBook } from './holds.js';
import * as idempotency from './idempotency.js';
import * as liveness from './liveness.js';
import type { DeadInstancesReaped, ReapDeadOptions } from './liveness.js';
import * as reports from './reports.js';
import { invalid } from './rows.js';
import * as settlement from './settlement.js';
import * as verify from './verify.js';
import * as walletPayments from './wallet-payments.js';
import {
  SIGNUP_CREDIT,
  TOPUP_MAX,
  type AccountBalance,
  type AdvanceData,
  type AdvanceResult,
  type AnalyticsPoint,
  type ExactIntent,
  type ExactIntentInput,
  type ExactPayment,
  type ExactPaymentInput,
  type SponsoredFees,
  type VerifyMismatch,
  type WalletCredit,
  type ClaimResult,
  type CycleState,
  type FundingBatch,
  type Hold,
  type HoldOptions,
  type HoldResult,
  type IdempotencyClaim,
  type IdempotencyOptions,
  type IdempotentResult,
  type LedgerHooks,
  type LedgerOptions,
  type LedgerTransaction,
  type OpenAccountResult,
  type PlatformStats,
  type PostOptions,
  type PublisherTotals,
  type ResolveResult,
  type ServiceStats,
  type SettlementCycle,
  type TopupResult,
  type VerifyReport,
  type WalletPayment,
  type WalletPaymentInput,
} from './types.js';
import { leadOf, systemClock, type Clock } from './clock.js';

/**
 * The ledger: credits, two-phase holds, journal, idempotency keys, publisher
 * earnings and settlement bookkeeping, over one {@link Database}.
 *
 * @example
 * const ledger = await openLedger({ dataDir: './.farebox/db' });
 * await ledger.openAccount('acct_1');                       // 5 USD sign-up credit
 * const { hold } = await ledger.hold('acct_1', 1_000_000n, { callId: 'c1', service: 'echo' });
 * await ledger.post(hold.id, { publisherOwner: 'G...', service: 'echo', gross: 1_000_000n });
 */
export class Ledger {
  readonly db: Database;
  private readonly holds: HoldBook;
  private readonly signupCredit: bigint;
  /** The host's code in the ledger's transactions (the gateway's webhook outbox). */
  private readonly hooks: LedgerHooks;
  /** This process's row in `ledger_instances` (see {@link joinInstance}). */
  private instance: string | null = null;
  /** The host's clock (clock.ts). */
  private readonly now: Clock;

  /**
   * `batch` (default on): key-less holds and exact posts that arrive while others are being written go together in
   * one statement and one commit (group commit). Results are the same as one by one; `false` sends each alone.
   */
  constructor(db: Database, options: LedgerOptions = {}) {
    this.db = db;
    const credit = options.signupCredit ?? SIGNUP_CREDIT;
    if (typeof credit !== 'bigint' || credit < 0n || credit > TOPUP_MAX)
      invalid('signupCredit must be 0 to 1,000 USD in base units', { field: 'signupCredit' });
    this.signupCredit = credit;
    this.hooks = options.hooks ?? {};
    this.now = options.now ?? systemClock;
    this.holds = new HoldBook(db, options.batch, options.now, () => this.instance);
    this.channels = channels.channelsApi(db, () => leadOf(this.now)());
  }

  close(): Promise<void> {
    return this.db.close();
  }

  // ---------------------------------------------------------------- credits

  /**
   * Creates the account with the sign-up credit (5 USD unless the ledger was
   * opened with another `signupCredit`), exactly once: a second
   * call (or a concurrent one) changes nothing and reports `created: false`.
   */
  openAccount(accountId: string): Promise<OpenAccountResult> {
    return accounts.openAccount(this.db, accountId, this.signupCredit);
  }

  /** Credits, held and aggregated amounts of an account; `ACCOUNT_NOT_FOUND` when unknown. */
  balance(accountId: string, q: Queryable = this.db): Promise<AccountBalance> {
    return accounts.readBalance(q, accountId);
  }

  /**
   * Adds credits: 0 < amount <= 1,000 USD per request (`INVALID_AMOUNT`,
   * `invalid amount (must be 0 < n <= 1000)`), and aggregated credits
   * (balance + pending holds) may not pass 10,000 USD (`BALANCE_CAP_EXCEEDED`,
   * `balance cap exceeded (max $10000)`). Refused top-ups change nothing.
   */
  topup(accountId: string, amount: bigint, options: { reference?: string; once?: boolean } = {}): Promise<TopupResult> {
    return accounts.topup(this.db, accountId, amount, options, this.hooks);
  }

  // ------------------------------------------------------------------- holds

  /**
   * Places a hold: one conditional statement debits the credits only if they
   * cover `amount` (it cannot overdraw, also under concurrency), inserts the
   * hold and its journal row. `INSUFFICIENT_BALANCE` (`insufficient balance`)
   * otherwise. With `idempotencyKey`, a live hold under that key is returned
   * (`replayed: true`) instead of a second debit.
   */
  hold(accountId: string, amount: bigint, options: HoldOptions): Promise<HoldResult> {
    return this.holds.hold(accountId, amount, options);
  }

  /** What each credential spent (`spent`) and holds in flight (`held`) in the periods asked for; keyed `credential + '\n' + period`. */
  budgets(of: ReadonlyArray<{ credential: string; period: string }>): Promise<Map<string, budgets.BudgetUse>> {
    return budgets.readBudgets(this.db, of);
  }

  /** The hold, or `HOLD_NOT_FOUND`. */
  getHold(holdId: string): Promise<Hold> {
    return this.holds.getHold(holdId);
  }

  /**
   * Posts a pending hold (the call succeeded): records the publisher earning
   * with gross, fee and net (`splitFee`, fee rounded down; the claim into a
   * settlement cycle later makes the fee the earning's share of the cycle's
   * fee, see {@link claimEarnings}) and returns any
   * part of the hold above `gross` to credits, all in one statement. At most
   * once: a second post or a post after a void changes nothing and reports the
   * final state with `applied: false`.
   */
  post(holdId: string, options: PostOptions): Promise<ResolveResult> {
    return this.holds.post(holdId, options);
  }

  /**
   * Voids a pending hold (the call failed): the money returns to credits, a
   * refund, in one statement. At most once: a second void or a void after a
   * post changes nothing and reports the final state with `applied: false`.
   */
  void(holdId: string, reason: string): Promise<ResolveResult> {
    return this.holds.void(holdId, reason);
  }

  /**
   * Voids holds left pending by a crash: every pending hold past its own
   * timeout, and, with `olderThanMs`, every pending hold placed longer ago
   * than that. Each void is the same at-most-once statement as {@link void},
   * so several reapers (and a late post) can race safely. Returns the ids
   * this run voided. Expiry is read at the database's time, moved as the
   * `now` option says; `olderThanMs` is measured by the database's time.
   */
  reapExpiredHolds(olderThanMs?: number, options: { limit?: number } = {}): Promise<{ voided: string[] }> {
    return this.holds.reapExpiredHolds(olderThanMs, options);
  }

  // ------------------------------------------------------------ idempotency

  /**
   * Stripe-style idempotency key. The first request under `key` runs `fn`
   * and its (JSON-serializable) response is stored; a retry with the same
   * `requestHash` returns the stored response without running `fn` again
   * (`replayed: true`); the same key with another request hash gives
   * `IDEMPOTENCY_MISMATCH`. A duplicate that arrives while the first is still
   * running gets `IDEMPOTENCY_IN_PROGRESS` at once (or after `waitMs`).
   * If `fn` throws, no response is stored and the key is released, so a retry runs again (unless `fn`
   * said its outcome comes `later`: {@link IdempotencyClaim}); return error responses (a refunded 500)
   * as values to have them stored. An attempt that crashed is taken over after `leaseMs`; pass the same
   * key to {@link hold} inside `fn` so the takeover reuses the crashed attempt's hold instead of charging twice.
   */
  withIdempotency<T>(
    accountId: string,
    key: string,
    requestHash: string,
    fn: (claim: IdempotencyClaim<T>) => Promise<T>,
    options: IdempotencyOptions = {},
  ): Promise<IdempotentResult<T>> {
    return idempotency.withIdempotency(this.db, accountId, key, requestHash, fn, options, this.instance, this.now);
  }

  // --------------------------------------------------------------- liveness

  /** This process's instance id once it joined ({@link joinInstance}), else null. */
  get instanceId(): string | null {
    return this.instance;
  }

  /**
   * Joins the processes on this database as a new instance (`name`: host
   * and pid, for operators): from now on each hold and idempotency lease
   * this ledger makes records the instance, in the statement that makes it.
   * Beat with {@link beatInstance} more often than the `timeoutMs` that other
   * instances' {@link reapDeadInstances} use, or they give back what it holds.
   */
  async joinInstance(name: string): Promise<string> {
    this.instance = await liveness.joinInstance(this.db, name);
    return this.instance;
  }

  /**
   * One beat (by the database's clock). An instance that others declared
   * dead (its beats stopped for `timeoutMs`) joins again under a new id
   * (`rejoined`); its holds and leases under the old id are given back.
   * `steady`: beats have not missed `timeoutMs` for at least `timeoutMs`
   * (only then does {@link reapDeadInstances} declare others dead).
   */
  async beatInstance(timeoutMs: number, name: string): Promise<{ instanceId: string; rejoined: boolean; steady: boolean }> {
    if (this.instance === null) invalid('the ledger joined no instance (joinInstance)', { field: 'instance' });
    const r = await liveness.beat(this.db, this.instance, timeoutMs);
    if (r.alive) return { instanceId: this.instance, rejoined: false, steady: r.steady };
    return { instanceId: await this.joinInstance(name), rejoined: true, steady: false };
  }

  /** Leaves (a process that stops): the instance is dead, and what it still holds goes back at the next reap of any instance. */
  async leaveInstance(): Promise<void> {
    if (this.instance === null) return;
    await liveness.leaveInstance(this.db, this.instance);
    this.instance = null;
  }

  /**
   * Gives back what dead instances held: marks as dead every other instance
   * whose last beat is older than `timeoutMs` (only while this one beats
   * steadily), or every other one with `sole` (this process alone opens the
   * database: embedded PGlite), then voids their pending holds with the
   * reaper's void (reason `its process stopped: voided by the reaper`), ends
   * their idempotency leases so that a retry runs at once (except a call's
   * lease whose account has a wallet payment pending since the key was
   * claimed: that one ends by its own time; a top-up's lease always ends, its
   * retry finishes the same payment), and drops their rows.
   */
  async reapDeadInstances(options: ReapDeadOptions): Promise<DeadInstancesReaped> {
    if (this.instance === null) invalid('the ledger joined no instance (joinInstance)', { field: 'instance' });
    return liveness.reapDeadInstances(this.db, this.instance, options, async (holdId) => {
      return (await this.holds.void(holdId, 'its process stopped: voided by the reaper')).applied;
    });
  }

  // ---------------------------------------------- transactions and earnings

  /**
   * An account's top-ups (and sign-up credit) and calls, newest first; see
   * {@link TransactionStatus}. A call's `txSignature` / `explorerUrl` is the
   * settlement funding transaction once its earning has been funded.
   */
  transactions(accountId: string, limit = 50): Promise<LedgerTransaction[]> {
    return reports.transactions(this.db, accountId, limit);
  }

  /**
   * Earned, pending (not yet paid out) and settled totals of a publisher
   * owner. `settled` is what the settlement escrows paid: per settled cycle,
   * its gross less floor(gross x 5%), the fee the escrow takes at release on
   * the cycle total; `pending` is the net of the other earnings (a claimed
   * earning's is its share of its cycle's net, an unclaimed one's its own);
   * `earned` = settled + pending.
   */
  publisherTotals(publisherOwner: string): Promise<PublisherTotals> {
    return reports.publisherTotals(this.db, publisherOwner);
  }

  /** Daily series (UTC) of the last `days` days, 1 to 90 (default 30), oldest first, with empty days as zeros. */
  publisherAnalytics(publisherOwner: string, days = 30): Promise<AnalyticsPoint[]> {
    return reports.publisherAnalytics(this.db, publisherOwner, days);
  }

  /** Calls and earnings per service of a publisher owner. */
  serviceStats(publisherOwner: string): Promise<ServiceStats[]> {
    return reports.serviceStats(this.db, publisherOwner);
  }

  /** Marketplace totals and platform revenue (the fees). */
  platformStats(): Promise<PlatformStats> {
    return reports.platformStats(this.db);
  }

  // ------------------------------------------------------------ settlement

  /** The publisher owner's open cycle, opened now if there is none. */
  openCycle(publisherOwner: string): Promise<SettlementCycle> {
    return settlement.openCycle(this.db, publisherOwner);
  }

  /** A cycle with its amounts, funding batches and steps; `CYCLE_NOT_FOUND` when unknown. */
  getCycle(cycleId: string): Promise<SettlementCycle> {
    return settlement.getCycle(this.db, cycleId);
  }

  /** A publisher owner's cycles, newest first (`limit` 1 to 200, default 50). */
  listCycles(publisherOwner: string, limit = 50): Promise<SettlementCycle[]> {
    return settlement.listCycles(this.db, publisherOwner, limit);
  }

  /** Cycles not yet `done` or `failed` (optionally in the given states): what a settler resumes after a restart. */
  activeCycles(states?: readonly CycleState[]): Promise<SettlementCycle[]> {
    return settlement.activeCycles(this.db, states);
  }

  /**
   * Assigns the owner's unassigned earnings (oldest first, up to `limit`) to
   * the cycle, atomically, and adds their sums to the cycle's totals: each
   * earning ends in exactly one cycle, claims on one cycle take turns, and
   * claims on two cycles of the owner take disjoint sets (`FOR UPDATE SKIP
   * LOCKED`). Only
   * while the cycle is `open`, `closing` or `deployed` (`CYCLE_NOT_OPEN`).
   * With `batch: true` what is claimed also forms a `prepared` funding batch
   * in the same statement (as {@link prepareFunding} would make next), so
   * each earning is written once. The claim fixes each earning's fee as its
   * share of the cycle's fee (schema 11): the fee on the cycle's running total
   * up to it less the fee on the total before it, so a cycle's fee is always
   * floor(gross x 5%) of its whole gross, what its escrow takes at release.
   * An earning held back (`hold_until`, a settle-first x402 payment's refund window) is not claimed before its hold ends.
   */
  claimEarnings(cycleId: string, options: { limit?: number; batch?: boolean } = {}): Promise<ClaimResult> {
    return settlement.claimEarnings(this.db, cycleId, options);
  }

  /**
   * Moves a cycle from `from` to `to` only if it is in `from` now (optimistic;
   * `applied: false` with the current cycle otherwise), recording the step and
   * its on-chain transaction. `INVALID_TRANSITION` for a move the state
   * machine does not allow; moving to `funded` needs every claimed earning in
   * a confirmed funding batch (`UNFUNDED_EARNINGS`); `closing -> done` is for
   * an empty cycle only.
   */
  advance(cycleId: string, from: CycleState, to: CycleState, data: AdvanceData = {}): Promise<AdvanceResult> {
    return settlement.advance(this.db, cycleId, from, to, data, this.hooks);
  }

  /**
   * Merges `data` into a cycle's `data` object (and sets its escrow id when
   * given) without a state move: the settler's durable notes, such as the
   * signed transaction it is about to submit. Refused (`CYCLE_NOT_OPEN`) once
   * the cycle is `done` or `failed`.
   */
  recordCycleData(cycleId: string, input: { escrowId?: string; data?: Record<string, unknown> }): Promise<SettlementCycle> {
    return settlement.recordCycleData(this.db, cycleId, input);
  }

  /** Publisher owners with earnings in no cycle yet (what a settler must pick up). */
  unsettledOwners(limit = 1000): Promise<string[]> {
    return settlement.unsettledOwners(this.db, limit);
  }

  // --------------------------------------------------------------- funding

  /**
   * Puts the cycle's claimed, not yet batched earnings into a new funding
   * batch and fixes its amount (their gross), before the on-chain funding is
   * sent; `null` when there is nothing to fund. Concurrent preparers take
   * disjoint earnings. Confirm it with {@link confirmFunding}.
   */
  prepareFunding(cycleId: string): Promise<FundingBatch | null> {
    return funding.prepareFunding(this.db, cycleId);
  }

  /** Records the funding transaction of a prepared batch, once (`applied: false` when already confirmed). */
  confirmFunding(batchId: string, data: { txHash: string; explorerUrl?: string }): Promise<{ applied: boolean; batch: FundingBatch }> {
    return funding.confirmFunding(this.db, batchId, data);
  }

  // ---------------------------------------------------------- wallet path

  /**
   * Records the intent of a wallet payment (state `pending`) before anything
   * is sent on chain; a second record with the same account, kind and
   * `callId` returns the first (idempotent). With `budget`, the amount is
   * reserved against it in the same statement (`BUDGET_EXCEEDED`, nothing
   * recorded, when it does not fit), and {@link resolveWalletPayment} spends
   * it (completed) or gives it back (failed) in the resolving transaction.
   */
  recordWalletPayment(accountId: string, input: WalletPaymentInput): Promise<WalletPayment> {
    return walletPayments.recordWalletPayment(this.db, accountId, input);
  }

  /** Merges notes into a pending wallet payment (e.g. the signed transaction about to be submitted, the escrow id). */
  noteWalletPayment(paymentId: string, input: { escrowId?: string; data?: Record<string, unknown> }): Promise<WalletPayment> {
    return walletPayments.noteWalletPayment(this.db, paymentId, input);
  }

  /**
   * Resolves a pending wallet payment once: `completed` with its transaction,
   * or `failed` with the reason. A `topup` completed here also credits its
   * amount in the same database transaction (journal reference
   * `wallet:<txHash>`), within the top-up limits, and claims the transaction
   * in `wallet_credits`: a transaction that already backs a credit (of any
   * account) credits nothing again, and the payment ends `failed` saying so.
   * `applied: false` when the payment was already resolved.
   */
  resolveWalletPayment(
    paymentId: string,
    outcome: { state: 'completed'; txHash: string; explorerUrl?: string; escrowId?: string } | { state: 'failed'; error: string },
  ): Promise<{ applied: boolean; payment: WalletPayment; balance: bigint | null }> {
    return walletPayments.resolveWalletPayment(this.db, paymentId, outcome, this.hooks);
  }

  /** Credits that wallet payments back, in claim order after the `after` cursor (a credit's `seq`; the chain audit reads them). */
  walletCredits(options: { after?: bigint; limit?: number } = {}): Promise<WalletCredit[]> {
    return walletPayments.walletCredits(this.db, options);
  }

  /** A wallet payment by id. */
  getWalletPayment(paymentId: string): Promise<WalletPayment> {
    return walletPayments.getWalletPayment(this.db, paymentId);
  }

  /** Wallet payments still `pending` (a crash left them): what the gateway reconciles at start. */
  pendingWalletPayments(limit = 100): Promise<WalletPayment[]> {
    return walletPayments.pendingWalletPayments(this.db, limit);
  }

  // ------------------------------------- x402 exact payments (exact-payments.ts)

  /** Records a settled `exact` payment into the treasury as the service's earning, once per transaction hash. */
  recordExactPayment(input: ExactPaymentInput): Promise<{ recorded: boolean; payment: ExactPayment }> {
    return exactPayments.recordExactPayment(this.db, input);
  }

  exactPayment(txHash: string): Promise<ExactPayment | null> {
    return exactPayments.getExactPayment(this.db, txHash);
  }
  /** Settlement intents (exact-intents.ts): written before a settlement moves anything, closed after, reconciled from the chain. */
  readonly exactIntents = {
    open: (input: ExactIntentInput) => exactIntents.openExactIntent(this.db, input),
    get: (payer: string, nonce: string): Promise<ExactIntent | null> => exactIntents.getExactIntent(this.db, payer, nonce),
    close: (payer: string, nonce: string, outcome: exactIntents.ExactIntentOutcome) => exactIntents.closeExactIntent(this.db, payer, nonce, outcome),
    due: (options: exactIntents.DueExactIntents) => exactIntents.dueExactIntents(this.db, options),
  };
  /** Reserves sponsored fees for a payer's UTC day in one statement that never passes `bound`. */
  reserveSponsoredFee(payer: string, day: string, amount: bigint, bound: bigint): Promise<{ reserved: boolean; total: bigint }> {
    return exactPayments.reserveSponsoredFee(this.db, payer, day, amount, bound);
  }
  releaseSponsoredFee(payer: string, day: string, amount: bigint, options: { submitted: boolean }): Promise<SponsoredFees> {
    return exactPayments.releaseSponsoredFee(this.db, payer, day, amount, options);
  }
  /** Whether `payer` has an `exact` payment recorded (any day). */
  exactPayerSettled(payer: string): Promise<boolean> {
    return exactPayments.exactPayerSettled(this.db, payer);
  }
  sponsoredFees(payer: string, day: string): Promise<SponsoredFees> {
    return exactPayments.sponsoredFees(this.db, payer, day);
  }

  // ------------------------------------------- MPP payment channels (channels.ts)

  /** MPP channel sessions (migration 0019): the channels, their vouchers and withdrawals ({@link channels.channelsApi}). */
  readonly channels: ChannelsApi;

  // ----------------------------------------------------------------- verify

  /**
   * Recomputes every balance and hold from the journal and reports each
   * mismatch: account credits vs. the journal's sum, each hold's state vs. its
   * journal rows, posted holds vs. earnings, each settlement cycle's totals
   * vs. its earnings, each wallet-backed credit vs. its payment and its
   * transaction's single claim, each x402 exact payment vs. its one earning, each channel payment vs. its one earning and
   * each payment channel's paid vs. its payments (and withdrawn <= paid), each settlement intent still pending
   * past its `resolveBy`, and conservation (sign-ups + top-ups = credits + held + gross earnings of posted calls).
   * What the chain holds is checked by the gateway's wallet-credit audit, which reads {@link walletCredits}.
   */
  verify(): Promise<VerifyReport> {
    return verify.verify(this.db);
  }

  /** The wallet-credit checks of {@link verify} alone (cheap enough to run on a timer). */
  verifyWalletCredits(): Promise<VerifyMismatch[]> {
    return verify.verifyWalletCredits(this.db);
  }
}
