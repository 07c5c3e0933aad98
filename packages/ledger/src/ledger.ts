import { createHash } from 'node:crypto';
import { BASE_UNITS_PER_USDC, MAX_BASE_UNITS, PLATFORM_FEE_BPS, parseAmount, splitFee } from '@farebox/protocol';
import type { Database, OpenDatabaseOptions, Queryable } from './db.js';
import { openDatabase, prepared } from './db.js';
import { Batcher, type BatchOptions, type Pending } from './batch.js';
import { LedgerError, sqlState } from './errors.js';
import { LEDGER_MIGRATIONS_DIR, LEDGER_NAMESPACE, migrate } from './migrate.js';
import type { MigrateResult } from './migrate.js';

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
/** Earnings may be claimed and funding batches prepared in these states. */
const CLAIMABLE: readonly CycleState[] = ['open', 'closing', 'deployed'];
/** Earnings of cycles in these states count as settled (paid out to the publisher). */
const SETTLED: readonly CycleState[] = ['swept', 'done'];

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
}

export interface WalletPaymentInput {
  kind: 'call' | 'topup';
  /** Unique per account and kind: a second record with the same id returns the first. */
  callId: string;
  amount: bigint;
  service?: string;
  publisherOwner?: string;
  data?: Record<string, unknown>;
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
}

export interface VerifyMismatch {
  kind: 'balance' | 'hold' | 'earning' | 'conservation';
  id: string;
  expected: string;
  actual: string;
}

export interface VerifyReport {
  ok: boolean;
  accounts: number;
  holds: number;
  mismatches: VerifyMismatch[];
  /** Conservation: credited (sign-ups + top-ups) = credits + held + gross earnings. */
  totals: { credited: bigint; credits: bigint; held: bigint; earned: bigint };
}

export interface IdempotencyOptions {
  /** How long an attempt owns the key before another may take over (crash recovery). Default 60 s. */
  leaseMs?: number;
  /** How long a concurrent duplicate waits for the first to finish; 0 (default) refuses at once with IDEMPOTENCY_IN_PROGRESS. */
  waitMs?: number;
}

export interface IdempotentResult<T> {
  response: T;
  /** True when the stored response of an earlier attempt was returned and `fn` did not run. */
  replayed: boolean;
}

type Row = Record<string, unknown>;

export interface LedgerOptions {
  /** Group commit of holds and posts (default on); `false` sends each alone. */
  batch?: boolean | BatchOptions;
  /** Credits a new account starts with (base units, default {@link SIGNUP_CREDIT}; 0 for none). */
  signupCredit?: bigint;
}

interface HoldInput {
  accountId: string;
  amount: bigint;
  callId: string;
  service: string;
  key: string | null;
  timeoutMs: number;
}

interface PostInput {
  holdId: string;
  publisherOwner: string;
  service: string;
  gross: bigint;
  fee: bigint;
  net: bigint;
}

/** Settles `item` with what `run` gives (or throws). */
function settle<O>(item: Pending<unknown, O>, run: () => Promise<O>): Promise<void> {
  return run().then(
    (output) => item.resolve(output),
    (error: unknown) => item.reject(error),
  );
}

const str = (v: unknown): string => String(v);
const big = (v: unknown): bigint => BigInt(v as string);
const bigOrNull = (v: unknown): bigint | null => (v === null || v === undefined ? null : BigInt(v as string));
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));

function toHold(r: Row): Hold {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    amount: big(r.amount),
    state: r.state as HoldState,
    callId: str(r.call_id),
    service: str(r.service),
    idempotencyKey: strOrNull(r.idempotency_key),
    paidWith: r.paid_with as PaidWith,
    postedAmount: bigOrNull(r.posted_amount),
    voidReason: strOrNull(r.void_reason),
    expiresAt: date(r.expires_at),
    createdAt: date(r.created_at),
    resolvedAt: dateOrNull(r.resolved_at),
  };
}

function toEarning(r: Row): Earning {
  return {
    id: str(r.id),
    holdId: str(r.hold_id),
    payerAccountId: str(r.payer_account_id),
    publisherOwner: str(r.publisher_owner),
    service: str(r.service),
    gross: big(r.gross),
    fee: big(r.fee),
    net: big(r.net),
    cycleId: strOrNull(r.cycle_id),
    fundingBatchId: strOrNull(r.funding_batch_id),
    createdAt: date(r.created_at),
  };
}

function toBatch(r: Row): FundingBatch {
  return {
    id: str(r.id),
    cycleId: str(r.cycle_id),
    amount: big(r.amount),
    state: r.state as FundingBatch['state'],
    txHash: strOrNull(r.tx_hash),
    explorerUrl: strOrNull(r.explorer_url),
    createdAt: date(r.created_at),
    confirmedAt: dateOrNull(r.confirmed_at),
  };
}

function toWalletPayment(r: Row): WalletPayment {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    kind: r.kind as WalletPayment['kind'],
    callId: str(r.call_id),
    service: strOrNull(r.service),
    publisherOwner: strOrNull(r.publisher_owner),
    amount: big(r.amount),
    state: r.state as WalletPayment['state'],
    escrowId: strOrNull(r.escrow_id),
    txHash: strOrNull(r.tx_hash),
    explorerUrl: strOrNull(r.explorer_url),
    error: strOrNull(r.error),
    data: (r.data ?? {}) as Record<string, unknown>,
    createdAt: date(r.created_at),
    resolvedAt: dateOrNull(r.resolved_at),
  };
}

function invalid(message: string, data?: Record<string, unknown>): never {
  throw new LedgerError('INVALID_INPUT', message, data);
}

function text(value: unknown, name: string, max = 256): string {
  if (typeof value !== 'string' || value.length === 0) invalid(`${name} required`, { field: name });
  if (value.length > max) invalid(`${name} too long (max ${max})`, { field: name });
  return value;
}

function positiveAmount(value: unknown, name: string): bigint {
  if (typeof value !== 'bigint') invalid(`${name} must be a bigint of base units`, { field: name });
  if (value <= 0n || value > MAX_BASE_UNITS) {
    throw new LedgerError('INVALID_AMOUNT', `${name} must be between 1 and ${MAX_BASE_UNITS} base units`, { field: name, amount: value.toString() });
  }
  return value;
}

function positiveInt(value: unknown, name: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    invalid(`${name} must be an integer from 1 to ${max}`, { field: name, value });
  }
  return value;
}

function isUuid(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'bigint') return JSON.stringify(value.toString());
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * SHA-256 (hex) of a request in canonical JSON (keys sorted), the
 * `requestHash` of {@link Ledger.withIdempotency}: two bodies with the same
 * content in another key order hash the same.
 */
export function hashRequest(request: unknown): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

/**
 * Parses a top-up amount given in USD (the JSON edge) into base units, with
 * the spec's limit: 0 < amount <= 1000, else `INVALID_AMOUNT` with the spec's
 * message `invalid amount (must be 0 < n <= 1000)`.
 */
export function parseTopupAmount(usd: unknown): bigint {
  let units: bigint;
  try {
    if (typeof usd !== 'number' && typeof usd !== 'string') throw new TypeError('not a number');
    units = parseAmount(usd);
  } catch {
    throw new LedgerError('INVALID_AMOUNT', LEDGER_MESSAGES.invalidTopup, { amount: String(usd) });
  }
  if (units <= 0n || units > TOPUP_MAX) throw new LedgerError('INVALID_AMOUNT', LEDGER_MESSAGES.invalidTopup, { amount: String(usd) });
  return units;
}

const HOLD_SQL = prepared('ledger_hold', `
WITH debit AS (
  UPDATE accounts SET balance = balance - $2::bigint
  WHERE id = $1 AND balance >= $2::bigint
  RETURNING id, balance
), h AS (
  INSERT INTO holds (account_id, amount, call_id, service, idempotency_key, expires_at)
  SELECT id, $2::bigint, $3, $4, $5, now() + make_interval(secs => $6::float8 / 1000) FROM debit
  RETURNING *
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'hold', amount, -amount, amount, id FROM h
)
SELECT h.*, debit.balance AS new_balance FROM h, debit`);

const POST_SQL = prepared('ledger_post', `
WITH h AS (
  UPDATE holds SET state = 'posted', posted_amount = $2::bigint, resolved_at = now()
  WHERE id = $1 AND state = 'pending' AND amount >= $2::bigint
  RETURNING *
), e AS (
  INSERT INTO earnings (hold_id, payer_account_id, publisher_owner, service, gross, fee, net)
  SELECT id, account_id, $3, $4, $2::bigint, $5::bigint, $6::bigint FROM h
  RETURNING *
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'post', $2::bigint, amount - $2::bigint, -amount, id FROM h
), back AS (
  UPDATE accounts a SET balance = a.balance + (h.amount - $2::bigint)
  FROM h WHERE a.id = h.account_id AND h.amount > $2::bigint
  RETURNING a.balance
)
SELECT h.*, e.id AS e_id, e.publisher_owner AS e_owner, e.service AS e_service, e.gross AS e_gross,
       e.fee AS e_fee, e.net AS e_net, e.cycle_id AS e_cycle, e.funding_batch_id AS e_batch, e.created_at AS e_created,
       COALESCE((SELECT balance FROM back), (SELECT balance FROM accounts WHERE id = h.account_id)) AS new_balance
FROM h, e`);

const VOID_SQL = prepared('ledger_void', `
WITH h AS (
  UPDATE holds SET state = 'voided', void_reason = $2, resolved_at = now()
  WHERE id = $1 AND state = 'pending'
  RETURNING *
), back AS (
  UPDATE accounts a SET balance = a.balance + h.amount
  FROM h WHERE a.id = h.account_id
  RETURNING a.balance
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'void', amount, amount, -amount, id FROM h
)
SELECT h.*, back.balance AS new_balance FROM h, back`);

// Group commit of key-less holds: migration 0003's function (accounts locked
// in id order; an account whose credits do not cover all of its holds in the
// batch is left to the one-by-one path).
const HOLD_BATCH_SQL = prepared(
  'ledger_hold_batch',
  'SELECT o_ord AS ord, o_id AS id, o_created_at AS created_at, o_expires_at AS expires_at, o_balance AS new_balance FROM farebox_hold_batch($1::text[], $2::bigint[], $3::text[], $4::text[], $5::float8[])',
);

// Group commit of posts that charge exactly the held amount (the call path's
// case). Anything else (a partial charge, a hold already resolved, a
// duplicate in the batch) is not matched and goes through POST_SQL alone.
const POST_BATCH_SQL = prepared('ledger_post_batch', `
WITH input AS (
  SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bigint[])
    WITH ORDINALITY AS i(hold_id, gross, owner, service, fee, net, ord)
), h AS (
  UPDATE holds SET state = 'posted', posted_amount = i.gross, resolved_at = now()
  FROM input i
  WHERE holds.id = i.hold_id AND holds.state = 'pending' AND holds.amount = i.gross
  RETURNING holds.*, i.ord, i.owner AS p_owner, i.service AS p_service, i.fee AS p_fee, i.net AS p_net
), e AS (
  INSERT INTO earnings (hold_id, payer_account_id, publisher_owner, service, gross, fee, net)
  SELECT id, account_id, p_owner, p_service, posted_amount, p_fee, p_net FROM h
  RETURNING id, hold_id, created_at
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'post', posted_amount, 0, -amount, id FROM h
)
SELECT h.*, e.id AS e_id, e.created_at AS e_created, (SELECT balance FROM accounts WHERE id = h.account_id) AS new_balance
FROM h JOIN e ON e.hold_id = h.id`);

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
  private readonly holdBatcher: Batcher<HoldInput, HoldResult> | undefined;
  private readonly postBatcher: Batcher<PostInput, ResolveResult> | undefined;
  private readonly signupCredit: bigint;

  /**
   * `batch` (default on): key-less holds and exact posts that arrive while
   * others are being written go together in one statement and one commit
   * (group commit). Results are the same as one by one; `false` sends each
   * alone.
   */
  constructor(db: Database, options: LedgerOptions = {}) {
    this.db = db;
    const credit = options.signupCredit ?? SIGNUP_CREDIT;
    if (typeof credit !== 'bigint' || credit < 0n || credit > TOPUP_MAX) invalid('signupCredit must be 0 to 1,000 USD in base units', { field: 'signupCredit' });
    this.signupCredit = credit;
    if (options.batch !== false) {
      const batch = options.batch === true || options.batch === undefined ? {} : options.batch;
      this.holdBatcher = new Batcher((items) => this.flushHolds(items), batch);
      this.postBatcher = new Batcher((items) => this.flushPosts(items), batch);
    }
  }

  close(): Promise<void> {
    return this.db.close();
  }

  // ---------------------------------------------------------------- accounts

  /**
   * Creates the account with the sign-up credit (5 USD unless the ledger was
   * opened with another `signupCredit`), exactly once: a second
   * call (or a concurrent one) changes nothing and reports `created: false`.
   */
  async openAccount(accountId: string): Promise<OpenAccountResult> {
    text(accountId, 'accountId', 128);
    const { rows } = await this.db.query(
      `WITH a AS (
         INSERT INTO accounts (id, balance) VALUES ($1, $2::bigint) ON CONFLICT (id) DO NOTHING RETURNING id, balance
       ), j AS (
         INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, reference)
         SELECT id, 'signup', balance, balance, 0, 'signup' FROM a WHERE balance > 0
       )
       SELECT balance FROM a`,
      [accountId, this.signupCredit.toString()],
    );
    const balance = await this.balance(accountId);
    return { ...balance, created: rows.length === 1 };
  }

  /** Credits, held and aggregated amounts of an account; `ACCOUNT_NOT_FOUND` when unknown. */
  async balance(accountId: string, q: Queryable = this.db): Promise<AccountBalance> {
    const { rows } = await q.query(
      `SELECT a.balance, COALESCE((SELECT sum(amount) FROM holds WHERE account_id = a.id AND state = 'pending'), 0) AS held
       FROM accounts a WHERE a.id = $1`,
      [accountId],
    );
    const row = rows[0];
    if (!row) throw new LedgerError('ACCOUNT_NOT_FOUND', 'account not found', { accountId });
    const balance = big(row.balance);
    const held = big(row.held);
    return { accountId, balance, held, aggregated: balance + held };
  }

  /**
   * Adds credits: 0 < amount <= 1,000 USD per request (`INVALID_AMOUNT`,
   * `invalid amount (must be 0 < n <= 1000)`), and aggregated credits
   * (balance + pending holds) may not pass 10,000 USD (`BALANCE_CAP_EXCEEDED`,
   * `balance cap exceeded (max $10000)`). Refused top-ups change nothing.
   */
  async topup(accountId: string, amount: bigint, options: { reference?: string; once?: boolean } = {}): Promise<TopupResult> {
    const reference = options.reference === undefined ? null : text(options.reference, 'reference');
    if (options.once && reference === null) invalid('a top-up made once needs a reference', { field: 'reference' });
    return this.db.transaction((tx) => this.topupIn(tx, accountId, amount, reference, true, options.once === true));
  }

  /**
   * `enforceCap: false` is for money already received on chain (a wallet
   * top-up checked against the cap before it was sent): it is credited even
   * if a concurrent top-up took the account over the cap in between.
   */
  private async topupIn(tx: Queryable, accountId: string, amount: bigint, reference: string | null, enforceCap = true, once = false): Promise<TopupResult> {
    if (typeof amount !== 'bigint' || amount <= 0n || amount > TOPUP_MAX) {
      throw new LedgerError('INVALID_AMOUNT', LEDGER_MESSAGES.invalidTopup, { amount: String(amount) });
    }
    // Lock the row first: holds and voids of this account wait, so the sum
    // of pending holds read next is exact. Posts only lower the aggregate.
    const locked = await tx.query('SELECT balance FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
    if (locked.rows.length === 0) throw new LedgerError('ACCOUNT_NOT_FOUND', 'account not found', { accountId });
    const before = await this.balance(accountId, tx);
    if (once) {
      // Under the account's row lock: a second top-up with this reference finds the first.
      const done = await tx.query(`SELECT 1 FROM journal WHERE account_id = $1 AND kind = 'topup' AND reference = $2`, [accountId, reference]);
      if (done.rows.length > 0) return { accountId, amount, balance: before.balance, held: before.held, aggregated: before.aggregated, applied: false };
    }
    if (enforceCap && before.aggregated + amount > BALANCE_CAP) {
      throw new LedgerError('BALANCE_CAP_EXCEEDED', LEDGER_MESSAGES.balanceCap, {
        amount: amount.toString(),
        aggregated: before.aggregated.toString(),
        cap: BALANCE_CAP.toString(),
      });
    }
    await tx.query('UPDATE accounts SET balance = balance + $2::bigint WHERE id = $1', [accountId, amount.toString()]);
    await tx.query(
      `INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, reference) VALUES ($1, 'topup', $2::bigint, $2::bigint, 0, $3)`,
      [accountId, amount.toString(), reference],
    );
    const balance = before.balance + amount;
    return { accountId, amount, balance, held: before.held, aggregated: balance + before.held, applied: true };
  }

  // ------------------------------------------------------------------- holds

  /**
   * Places a hold: one conditional statement debits the credits only if they
   * cover `amount` (it cannot overdraw, also under concurrency), inserts the
   * hold and its journal row. `INSUFFICIENT_BALANCE` (`insufficient balance`)
   * otherwise. With `idempotencyKey`, a live hold under that key is returned
   * (`replayed: true`) instead of a second debit.
   */
  async hold(accountId: string, amount: bigint, options: HoldOptions): Promise<HoldResult> {
    text(accountId, 'accountId', 128);
    positiveAmount(amount, 'amount');
    const callId = text(options?.callId, 'callId');
    const service = text(options?.service, 'service');
    const key = options.idempotencyKey === undefined ? null : text(options.idempotencyKey, 'idempotencyKey', 255);
    const timeoutMs = options.timeoutMs === undefined ? DEFAULT_HOLD_TIMEOUT_MS : positiveInt(options.timeoutMs, 'timeoutMs', 2_147_483_647);
    const input: HoldInput = { accountId, amount, callId, service, key, timeoutMs };
    if (key === null && this.holdBatcher) return this.holdBatcher.submit(input);
    return this.holdOne(input);
  }

  private async holdOne({ accountId, amount, callId, service, key, timeoutMs }: HoldInput): Promise<HoldResult> {
    if (key !== null) {
      const existing = await this.liveHoldByKey(accountId, key);
      if (existing) return existing;
    }
    let rows: Row[];
    try {
      ({ rows } = await this.db.query(HOLD_SQL, [accountId, amount.toString(), callId, service, key, timeoutMs]));
    } catch (error) {
      if (key !== null && sqlState(error) === '23505') {
        const existing = await this.liveHoldByKey(accountId, key);
        if (existing) return existing;
      }
      throw error;
    }
    const row = rows[0];
    if (!row) {
      const { rows: acct } = await this.db.query('SELECT balance FROM accounts WHERE id = $1', [accountId]);
      const found = acct[0];
      if (!found) throw new LedgerError('ACCOUNT_NOT_FOUND', 'account not found', { accountId });
      throw new LedgerError('INSUFFICIENT_BALANCE', LEDGER_MESSAGES.insufficientBalance, {
        accountId,
        needed: amount.toString(),
        available: str(found.balance),
      });
    }
    return { hold: toHold(row), balance: big(row.new_balance), replayed: false };
  }

  private async flushHolds(batch: Array<Pending<HoldInput, HoldResult>>): Promise<void> {
    if (batch.length === 1) return settle(batch[0]!, () => this.holdOne(batch[0]!.input));
    let rows: Row[];
    try {
      ({ rows } = await this.db.query(HOLD_BATCH_SQL, [
        batch.map((p) => p.input.accountId),
        batch.map((p) => p.input.amount.toString()),
        batch.map((p) => p.input.callId),
        batch.map((p) => p.input.service),
        batch.map((p) => p.input.timeoutMs),
      ]));
    } catch (error) {
      // Without a SQLSTATE the batch may have committed before the
      // connection failed: report the error rather than hold twice.
      if (sqlState(error) === undefined) throw error;
      for (const p of batch) await settle(p, () => this.holdOne(p.input));
      return;
    }
    const placed = new Map(rows.map((r) => [Number(r.ord), r]));
    const rest: Array<Pending<HoldInput, HoldResult>> = [];
    batch.forEach((p, i) => {
      const row = placed.get(i + 1);
      if (!row) return rest.push(p);
      const { accountId, amount, callId, service } = p.input;
      p.resolve({
        hold: {
          id: str(row.id),
          accountId,
          amount,
          state: 'pending',
          callId,
          service,
          idempotencyKey: null,
          paidWith: 'credit',
          postedAmount: null,
          voidReason: null,
          expiresAt: date(row.expires_at),
          createdAt: date(row.created_at),
          resolvedAt: null,
        },
        balance: big(row.new_balance),
        replayed: false,
      });
    });
    // What the batch left undecided goes one by one, in submission order.
    for (const p of rest) await settle(p, () => this.holdOne(p.input));
  }

  private async liveHoldByKey(accountId: string, key: string): Promise<HoldResult | undefined> {
    const { rows } = await this.db.query(
      `SELECT h.*, a.balance AS new_balance FROM holds h JOIN accounts a ON a.id = h.account_id
       WHERE h.account_id = $1 AND h.idempotency_key = $2 AND h.state <> 'voided'`,
      [accountId, key],
    );
    const row = rows[0];
    return row ? { hold: toHold(row), balance: big(row.new_balance), replayed: true } : undefined;
  }

  /** The hold, or `HOLD_NOT_FOUND`. */
  async getHold(holdId: string): Promise<Hold> {
    const row = await this.findHold(holdId);
    if (!row) throw new LedgerError('HOLD_NOT_FOUND', 'hold not found', { holdId });
    return toHold(row);
  }

  private async findHold(holdId: string): Promise<Row | undefined> {
    if (!isUuid(holdId)) return undefined;
    const { rows } = await this.db.query('SELECT * FROM holds WHERE id = $1', [holdId]);
    return rows[0];
  }

  /**
   * Posts a pending hold (the call succeeded): records the publisher earning
   * with gross, fee and net (`splitFee`, fee rounded down) and returns any
   * part of the hold above `gross` to credits, all in one statement. At most
   * once: a second post or a post after a void changes nothing and reports the
   * final state with `applied: false`.
   */
  async post(holdId: string, options: PostOptions): Promise<ResolveResult> {
    const publisherOwner = text(options?.publisherOwner, 'publisherOwner');
    const service = text(options?.service, 'service');
    const gross = positiveAmount(options?.gross, 'gross');
    const { fee, net } = splitFee(gross);
    if (!isUuid(holdId)) throw new LedgerError('HOLD_NOT_FOUND', 'hold not found', { holdId });
    const input: PostInput = { holdId, publisherOwner, service, gross, fee, net };
    return this.postBatcher ? this.postBatcher.submit(input) : this.postOne(input);
  }

  private async postOne({ holdId, publisherOwner, service, gross, fee, net }: PostInput): Promise<ResolveResult> {
    const { rows } = await this.db.query(
      POST_SQL,
      [holdId, gross.toString(), publisherOwner, service, fee.toString(), net.toString()],
    );
    const row = rows[0];
    if (row) {
      const hold = toHold(row);
      const earning = toEarning({
        id: row.e_id,
        hold_id: row.id,
        payer_account_id: row.account_id,
        publisher_owner: row.e_owner,
        service: row.e_service,
        gross: row.e_gross,
        fee: row.e_fee,
        net: row.e_net,
        cycle_id: row.e_cycle,
        funding_batch_id: row.e_batch,
        created_at: row.e_created,
      });
      return { hold, applied: true, balance: big(row.new_balance), earning };
    }
    const current = await this.getHold(holdId);
    if (current.state === 'pending') {
      throw new LedgerError('INVALID_AMOUNT', 'gross exceeds the held amount', { holdId, held: current.amount.toString(), gross: gross.toString() });
    }
    return this.finalState(current);
  }

  private async flushPosts(batch: Array<Pending<PostInput, ResolveResult>>): Promise<void> {
    if (batch.length === 1) return settle(batch[0]!, () => this.postOne(batch[0]!.input));
    let rows: Row[] = [];
    try {
      ({ rows } = await this.db.query(POST_BATCH_SQL, [
        batch.map((p) => p.input.holdId),
        batch.map((p) => p.input.gross.toString()),
        batch.map((p) => p.input.publisherOwner),
        batch.map((p) => p.input.service),
        batch.map((p) => p.input.fee.toString()),
        batch.map((p) => p.input.net.toString()),
      ]));
    } catch {
      // A post happens at most once, so going one by one after any failure is safe.
      rows = [];
    }
    const posted = new Map(rows.map((r) => [Number(r.ord), r]));
    await Promise.all(
      batch.map((p, i) => {
        const row = posted.get(i + 1);
        if (!row) return settle(p, () => this.postOne(p.input));
        p.resolve({
          hold: toHold(row),
          applied: true,
          balance: big(row.new_balance),
          earning: {
            id: str(row.e_id),
            holdId: str(row.id),
            payerAccountId: str(row.account_id),
            publisherOwner: str(row.p_owner),
            service: str(row.p_service),
            gross: big(row.posted_amount),
            fee: big(row.p_fee),
            net: big(row.p_net),
            cycleId: null,
            fundingBatchId: null,
            createdAt: date(row.e_created),
          },
        });
        return undefined;
      }),
    );
  }

  /**
   * Voids a pending hold (the call failed): the money returns to credits, a
   * refund, in one statement. At most once: a second void or a void after a
   * post changes nothing and reports the final state with `applied: false`.
   */
  async void(holdId: string, reason: string): Promise<ResolveResult> {
    const why = text(reason, 'reason', 1024);
    if (!isUuid(holdId)) throw new LedgerError('HOLD_NOT_FOUND', 'hold not found', { holdId });
    const { rows } = await this.db.query(VOID_SQL, [holdId, why]);
    const row = rows[0];
    if (row) return { hold: toHold(row), applied: true, balance: big(row.new_balance), earning: null };
    return this.finalState(await this.getHold(holdId));
  }

  private async finalState(hold: Hold): Promise<ResolveResult> {
    const { balance } = await this.balance(hold.accountId);
    let earning: Earning | null = null;
    if (hold.state === 'posted') {
      const { rows } = await this.db.query('SELECT * FROM earnings WHERE hold_id = $1', [hold.id]);
      earning = rows[0] ? toEarning(rows[0]) : null;
    }
    return { hold, applied: false, balance, earning };
  }

  /**
   * Voids holds left pending by a crash: every pending hold past its own
   * timeout, and, with `olderThanMs`, every pending hold placed longer ago
   * than that. Each void is the same at-most-once statement as {@link void},
   * so several reapers (and a late post) can race safely. Returns the ids
   * this run voided.
   */
  async reapExpiredHolds(olderThanMs?: number, options: { limit?: number } = {}): Promise<{ voided: string[] }> {
    if (olderThanMs !== undefined && (typeof olderThanMs !== 'number' || !Number.isFinite(olderThanMs) || olderThanMs < 0)) {
      invalid('olderThanMs must be a number >= 0', { olderThanMs });
    }
    const limit = options.limit === undefined ? 1000 : positiveInt(options.limit, 'limit', 100_000);
    const { rows } = await this.db.query(
      `SELECT id FROM holds
       WHERE state = 'pending'
         AND (expires_at <= now() OR ($1::float8 IS NOT NULL AND created_at <= now() - make_interval(secs => $1::float8 / 1000)))
       ORDER BY created_at LIMIT $2`,
      [olderThanMs ?? null, limit],
    );
    const voided: string[] = [];
    for (const row of rows) {
      const result = await this.void(str(row.id), 'expired: voided by the reaper');
      if (result.applied) voided.push(result.hold.id);
    }
    return { voided };
  }

  // ------------------------------------------------------------ idempotency

  /**
   * Stripe-style idempotency key. The first request under `key` runs `fn`
   * and its (JSON-serializable) response is stored; a retry with the same
   * `requestHash` returns the stored response without running `fn` again
   * (`replayed: true`); the same key with another request hash gives
   * `IDEMPOTENCY_MISMATCH`. A duplicate that arrives while the first is still
   * running gets `IDEMPOTENCY_IN_PROGRESS` at once (or after `waitMs`).
   * If `fn` throws, no response is stored and the key is released, so a
   * retry runs again; return error responses (such as a refunded 500) as
   * values to have them stored. An attempt that crashed is taken over after
   * `leaseMs`; pass the same key to {@link hold} inside `fn` so the takeover
   * reuses the crashed attempt's hold instead of charging twice.
   */
  async withIdempotency<T>(
    accountId: string,
    key: string,
    requestHash: string,
    fn: () => Promise<T>,
    options: IdempotencyOptions = {},
  ): Promise<IdempotentResult<T>> {
    text(accountId, 'accountId', 128);
    text(key, 'idempotency key', 255);
    text(requestHash, 'requestHash', 256);
    const leaseMs = options.leaseMs === undefined ? 60_000 : positiveInt(options.leaseMs, 'leaseMs', 86_400_000);
    const waitMs = options.waitMs ?? 0;
    const started = Date.now();
    for (;;) {
      const inserted = await this.db.query(
        `INSERT INTO idempotency_keys (account_id, key, request_hash, state, locked_until)
         VALUES ($1, $2, $3, 'in_progress', now() + make_interval(secs => $4::float8 / 1000))
         ON CONFLICT (account_id, key) DO NOTHING RETURNING attempt`,
        [accountId, key, requestHash, leaseMs],
      );
      let attempt: number | undefined = inserted.rows[0] ? Number(inserted.rows[0].attempt) : undefined;
      if (attempt === undefined) {
        const { rows } = await this.db.query('SELECT request_hash, state, response FROM idempotency_keys WHERE account_id = $1 AND key = $2', [accountId, key]);
        const row = rows[0];
        if (!row) continue; // released by a failed attempt in between: try again
        if (row.request_hash !== requestHash) {
          throw new LedgerError('IDEMPOTENCY_MISMATCH', 'idempotency key reused with a different request', { key });
        }
        if (row.state === 'completed') return { response: JSON.parse(str(row.response)) as T, replayed: true };
        const takeover = await this.db.query(
          `UPDATE idempotency_keys SET attempt = attempt + 1, locked_until = now() + make_interval(secs => $3::float8 / 1000)
           WHERE account_id = $1 AND key = $2 AND state = 'in_progress' AND locked_until < now() RETURNING attempt`,
          [accountId, key, leaseMs],
        );
        attempt = takeover.rows[0] ? Number(takeover.rows[0].attempt) : undefined;
        if (attempt === undefined) {
          if (Date.now() - started < waitMs) {
            await sleep(Math.min(25, waitMs));
            continue;
          }
          throw new LedgerError('IDEMPOTENCY_IN_PROGRESS', 'a request with this idempotency key is still in progress', { key });
        }
      }
      let response: T;
      try {
        response = await fn();
      } catch (error) {
        await this.db.query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'in_progress' AND attempt = $3`, [accountId, key, attempt]);
        throw error;
      }
      const stored = JSON.stringify(response) ?? 'null';
      const done = await this.db.query(
        `UPDATE idempotency_keys SET state = 'completed', response = $4, completed_at = now()
         WHERE account_id = $1 AND key = $2 AND state = 'in_progress' AND attempt = $3`,
        [accountId, key, attempt, stored],
      );
      if (done.rowCount === 0) {
        // Our lease ran out and another attempt finished first: its response is the one on record.
        const { rows } = await this.db.query(`SELECT response FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'completed'`, [accountId, key]);
        if (rows[0]) return { response: JSON.parse(str(rows[0].response)) as T, replayed: true };
      }
      return { response, replayed: false };
    }
  }

  // ------------------------------------------------------------ transactions

  /**
   * An account's top-ups (and sign-up credit) and calls, newest first; see
   * {@link TransactionStatus}. A call's `txSignature` / `explorerUrl` is the
   * settlement funding transaction once its earning has been funded.
   */
  async transactions(accountId: string, limit = 50): Promise<LedgerTransaction[]> {
    text(accountId, 'accountId', 128);
    positiveInt(limit, 'limit', 500);
    const { rows } = await this.db.query(
      `SELECT * FROM (
         (SELECT 'call' AS type, h.id::text AS id, COALESCE(h.posted_amount, h.amount) AS amount, h.service,
                 fb.tx_hash AS tx_signature, fb.explorer_url,
                 CASE h.state WHEN 'pending' THEN 'pending' WHEN 'posted' THEN 'completed' ELSE 'refunded' END AS status,
                 h.paid_with, NULL::text AS note, h.created_at, 1 AS ord
          FROM holds h
          LEFT JOIN earnings e ON e.hold_id = h.id
          LEFT JOIN funding_batches fb ON fb.id = e.funding_batch_id AND fb.state = 'confirmed'
          WHERE h.account_id = $1
          ORDER BY h.created_at DESC LIMIT $2)
         UNION ALL
         (SELECT 'call', w.id::text, w.amount, w.service, w.tx_hash, w.explorer_url,
                 w.state, 'wallet', w.error, w.created_at, 1
          FROM wallet_payments w WHERE w.account_id = $1 AND w.kind = 'call'
          ORDER BY w.created_at DESC LIMIT $2)
         UNION ALL
         (SELECT 'topup', j.id::text, j.amount, NULL, w.tx_hash, w.explorer_url, 'completed',
                 CASE WHEN w.id IS NOT NULL THEN 'wallet' END,
                 CASE WHEN j.kind = 'signup' THEN 'signup' WHEN w.id IS NOT NULL THEN NULL ELSE j.reference END, j.created_at, 0
          FROM journal j
          LEFT JOIN wallet_payments w ON w.account_id = j.account_id AND w.kind = 'topup' AND w.state = 'completed'
                                     AND j.reference = 'wallet:' || w.tx_hash
          WHERE j.account_id = $1 AND j.kind IN ('signup', 'topup')
          ORDER BY j.id DESC LIMIT $2)
         UNION ALL
         (SELECT 'topup', w.id::text, w.amount, NULL, w.data->>'hash', w.explorer_url, w.state, 'wallet', w.error, w.created_at, 0
          FROM wallet_payments w WHERE w.account_id = $1 AND w.kind = 'topup' AND w.state <> 'completed'
          ORDER BY w.created_at DESC LIMIT $2)
       ) t ORDER BY created_at DESC, ord DESC, id DESC LIMIT $2`,
      [accountId, limit],
    );
    return rows.map((r) => ({
      id: str(r.id),
      type: r.type as LedgerTransaction['type'],
      amount: big(r.amount),
      service: strOrNull(r.service),
      txSignature: strOrNull(r.tx_signature),
      explorerUrl: strOrNull(r.explorer_url),
      status: r.status as TransactionStatus,
      paidWith: (r.paid_with ?? null) as PaidWith | null,
      note: strOrNull(r.note),
      createdAt: date(r.created_at),
    }));
  }

  // -------------------------------------------------------------- earnings

  /**
   * Earned, pending (not yet paid out) and settled totals of a publisher
   * owner. `settled` is what the settlement escrows paid: per settled cycle,
   * its gross less floor(gross x 5%), the fee the escrow takes at release on
   * the cycle total; `pending` is the per-call net of the other earnings;
   * `earned` = settled + pending. (Per-call fees are floored call by call, so
   * a settled cycle may pay up to one base unit per call more than the sum of
   * its per-call nets, never less.)
   */
  async publisherTotals(publisherOwner: string): Promise<PublisherTotals> {
    text(publisherOwner, 'publisherOwner');
    const { rows } = await this.db.query(
      `WITH per_cycle AS (
         SELECT e.cycle_id, (c.state = ANY($2::text[])) AS settled, count(*) AS calls,
                sum(e.gross) AS gross, sum(e.fee) AS fee, sum(e.net) AS net
         FROM earnings e LEFT JOIN settlement_cycles c ON c.id = e.cycle_id
         WHERE e.publisher_owner = $1
         GROUP BY e.cycle_id, c.state
       )
       SELECT COALESCE(sum(calls), 0) AS calls, COALESCE(sum(gross), 0) AS gross,
              COALESCE(sum(CASE WHEN settled THEN gross::bigint * $3::bigint / 10000 ELSE fee END), 0) AS fee,
              COALESCE(sum(CASE WHEN settled THEN gross::bigint - gross::bigint * $3::bigint / 10000 ELSE 0 END), 0) AS settled,
              COALESCE(sum(CASE WHEN settled THEN 0 ELSE net END), 0) AS pending
       FROM per_cycle`,
      [publisherOwner, SETTLED, PLATFORM_FEE_BPS.toString()],
    );
    const r = rows[0] as Row;
    const settled = big(r.settled);
    const pending = big(r.pending);
    return { publisherOwner, calls: Number(r.calls), gross: big(r.gross), fee: big(r.fee), earned: settled + pending, pending, settled };
  }

  /** Daily series (UTC) of the last `days` days, 1 to 90 (default 30), oldest first, with empty days as zeros. */
  async publisherAnalytics(publisherOwner: string, days = 30): Promise<AnalyticsPoint[]> {
    text(publisherOwner, 'publisherOwner');
    positiveInt(days, 'days', 90);
    const { rows } = await this.db.query(
      `WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS d),
       series AS (SELECT (SELECT d FROM today) - k AS day FROM generate_series(0, $2::int - 1) AS k),
       agg AS (
         SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS calls,
                sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net
         FROM earnings
         WHERE publisher_owner = $1
           AND created_at >= (((SELECT d FROM today) - ($2::int - 1))::timestamp AT TIME ZONE 'UTC')
         GROUP BY 1
       )
       SELECT to_char(series.day, 'YYYY-MM-DD') AS day, COALESCE(agg.calls, 0) AS calls,
              COALESCE(agg.gross, 0) AS gross, COALESCE(agg.fee, 0) AS fee, COALESCE(agg.net, 0) AS net
       FROM series LEFT JOIN agg ON agg.day = series.day ORDER BY series.day`,
      [publisherOwner, days],
    );
    return rows.map((r) => ({ day: str(r.day), calls: Number(r.calls), gross: big(r.gross), fee: big(r.fee), earned: big(r.net) }));
  }

  /** Calls and earnings per service of a publisher owner. */
  async serviceStats(publisherOwner: string): Promise<ServiceStats[]> {
    text(publisherOwner, 'publisherOwner');
    const { rows } = await this.db.query(
      `SELECT service, count(*) AS calls, sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net
       FROM earnings WHERE publisher_owner = $1 GROUP BY service ORDER BY service`,
      [publisherOwner],
    );
    return rows.map((r) => ({ service: str(r.service), calls: Number(r.calls), gross: big(r.gross), fee: big(r.fee), earned: big(r.net) }));
  }

  /** Marketplace totals and platform revenue (the fees). */
  async platformStats(): Promise<PlatformStats> {
    const { rows } = await this.db.query(
      `SELECT
         (SELECT count(*) FROM accounts) AS accounts,
         (SELECT COALESCE(sum(balance), 0) FROM accounts) AS credits,
         (SELECT COALESCE(sum(amount), 0) FROM holds WHERE state = 'pending') AS held,
         (SELECT COALESCE(sum(amount), 0) FROM journal WHERE kind = 'topup') AS topups,
         (SELECT COALESCE(sum(amount), 0) FROM journal WHERE kind = 'signup') AS signups,
         e.calls, e.gross, e.fee, e.net
       FROM (SELECT count(*) AS calls, COALESCE(sum(gross), 0) AS gross, COALESCE(sum(fee), 0) AS fee, COALESCE(sum(net), 0) AS net FROM earnings) e`,
    );
    const r = rows[0] as Row;
    return {
      accounts: Number(r.accounts),
      calls: Number(r.calls),
      gross: big(r.gross),
      fees: big(r.fee),
      net: big(r.net),
      topups: big(r.topups),
      signupCredits: big(r.signups),
      credits: big(r.credits),
      held: big(r.held),
    };
  }

  // ------------------------------------------------------------ settlement

  /** The publisher owner's open cycle, opened now if there is none. */
  async openCycle(publisherOwner: string): Promise<SettlementCycle> {
    text(publisherOwner, 'publisherOwner');
    for (let i = 0; i < 10; i++) {
      const { rows } = await this.db.query(
        `INSERT INTO settlement_cycles (publisher_owner) VALUES ($1)
         ON CONFLICT (publisher_owner) WHERE state = 'open' DO NOTHING RETURNING id`,
        [publisherOwner],
      );
      const created = rows[0];
      if (created) return this.getCycle(str(created.id));
      const open = await this.db.query(`SELECT id FROM settlement_cycles WHERE publisher_owner = $1 AND state = 'open'`, [publisherOwner]);
      if (open.rows[0]) return this.getCycle(str(open.rows[0].id));
    }
    throw new LedgerError('CYCLE_NOT_OPEN', 'could not open a settlement cycle', { publisherOwner });
  }

  /** A cycle with its amounts, funding batches and steps; `CYCLE_NOT_FOUND` when unknown. */
  async getCycle(cycleId: string): Promise<SettlementCycle> {
    const id = this.cycleIdParam(cycleId);
    const { rows } = await this.db.query(
      `SELECT c.*,
         (SELECT count(*) FROM earnings WHERE cycle_id = c.id) AS calls,
         (SELECT COALESCE(sum(gross), 0) FROM earnings WHERE cycle_id = c.id) AS gross,
         (SELECT COALESCE(sum(fee), 0) FROM earnings WHERE cycle_id = c.id) AS fee,
         (SELECT COALESCE(sum(net), 0) FROM earnings WHERE cycle_id = c.id) AS net
       FROM settlement_cycles c WHERE c.id = $1`,
      [id],
    );
    const r = rows[0];
    if (!r) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
    const [steps, batches] = await Promise.all([
      this.db.query('SELECT * FROM settlement_steps WHERE cycle_id = $1 ORDER BY id', [id]),
      this.db.query('SELECT * FROM funding_batches WHERE cycle_id = $1 ORDER BY id', [id]),
    ]);
    const fundingBatches = batches.rows.map(toBatch);
    const gross = big(r.gross);
    const funded = fundingBatches.filter((b) => b.state === 'confirmed').reduce((s, b) => s + b.amount, 0n);
    const fundingPrepared = fundingBatches.filter((b) => b.state === 'prepared').reduce((s, b) => s + b.amount, 0n);
    return {
      id: str(r.id),
      publisherOwner: str(r.publisher_owner),
      state: r.state as CycleState,
      escrowId: strOrNull(r.escrow_id),
      error: strOrNull(r.error),
      data: (r.data ?? {}) as Record<string, unknown>,
      version: Number(r.version),
      openedAt: date(r.opened_at),
      closedAt: dateOrNull(r.closed_at),
      updatedAt: date(r.updated_at),
      calls: Number(r.calls),
      gross,
      fee: big(r.fee),
      net: big(r.net),
      funded,
      fundingPrepared,
      unfunded: gross - funded - fundingPrepared,
      steps: steps.rows.map((s) => ({
        fromState: s.from_state as CycleState,
        toState: s.to_state as CycleState,
        txHash: strOrNull(s.tx_hash),
        explorerUrl: strOrNull(s.explorer_url),
        createdAt: date(s.created_at),
      })),
      batches: fundingBatches,
    };
  }

  /** A publisher owner's cycles, newest first (`limit` 1 to 200, default 50). */
  async listCycles(publisherOwner: string, limit = 50): Promise<SettlementCycle[]> {
    text(publisherOwner, 'publisherOwner');
    positiveInt(limit, 'limit', 200);
    const { rows } = await this.db.query('SELECT id FROM settlement_cycles WHERE publisher_owner = $1 ORDER BY id DESC LIMIT $2', [publisherOwner, limit]);
    return Promise.all(rows.map((r) => this.getCycle(str(r.id))));
  }

  /** Cycles not yet `done` or `failed` (optionally in the given states): what a settler resumes after a restart. */
  async activeCycles(states?: readonly CycleState[]): Promise<SettlementCycle[]> {
    const wanted = states ?? CYCLE_STATES.filter((s) => s !== 'done' && s !== 'failed');
    for (const s of wanted) if (!CYCLE_STATES.includes(s)) invalid(`unknown cycle state ${String(s)}`);
    const { rows } = await this.db.query('SELECT id FROM settlement_cycles WHERE state = ANY($1::text[]) ORDER BY id', [wanted]);
    return Promise.all(rows.map((r) => this.getCycle(str(r.id))));
  }

  /**
   * Assigns the owner's unassigned earnings (oldest first, up to `limit`) to
   * the cycle, atomically: each earning ends in exactly one cycle, and
   * concurrent claimers take disjoint sets (`FOR UPDATE SKIP LOCKED`). Only
   * while the cycle is `open`, `closing` or `deployed` (`CYCLE_NOT_OPEN`).
   */
  async claimEarnings(cycleId: string, options: { limit?: number } = {}): Promise<ClaimResult> {
    const id = this.cycleIdParam(cycleId);
    const limit = options.limit === undefined ? 10_000 : positiveInt(options.limit, 'limit', 1_000_000);
    return this.db.transaction(async (tx) => {
      const owner = await this.lockClaimable(tx, id, cycleId);
      const { rows } = await tx.query(
        `UPDATE earnings SET cycle_id = $1
         WHERE id IN (SELECT id FROM earnings WHERE publisher_owner = $2 AND cycle_id IS NULL ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
           AND cycle_id IS NULL
         RETURNING gross, fee, net`,
        [id, owner, limit],
      );
      return rows.reduce<ClaimResult>(
        (acc, r) => ({ claimed: acc.claimed + 1, gross: acc.gross + big(r.gross), fee: acc.fee + big(r.fee), net: acc.net + big(r.net) }),
        { claimed: 0, gross: 0n, fee: 0n, net: 0n },
      );
    });
  }

  /**
   * Puts the cycle's claimed, not yet batched earnings into a new funding
   * batch and fixes its amount (their gross), before the on-chain funding is
   * sent; `null` when there is nothing to fund. Concurrent preparers take
   * disjoint earnings. Confirm it with {@link confirmFunding}.
   */
  async prepareFunding(cycleId: string): Promise<FundingBatch | null> {
    const id = this.cycleIdParam(cycleId);
    return this.db.transaction(async (tx) => {
      await this.lockClaimable(tx, id, cycleId);
      const picked = await tx.query(
        'SELECT id, gross FROM earnings WHERE cycle_id = $1 AND funding_batch_id IS NULL ORDER BY id FOR UPDATE SKIP LOCKED',
        [id],
      );
      if (picked.rows.length === 0) return null;
      const amount = picked.rows.reduce((s, r) => s + big(r.gross), 0n);
      const { rows } = await tx.query('INSERT INTO funding_batches (cycle_id, amount) VALUES ($1, $2::bigint) RETURNING *', [id, amount.toString()]);
      const batch = toBatch(rows[0] as Row);
      await tx.query('UPDATE earnings SET funding_batch_id = $1 WHERE id = ANY($2::bigint[])', [batch.id, picked.rows.map((r) => str(r.id))]);
      return batch;
    });
  }

  /** Records the funding transaction of a prepared batch, once (`applied: false` when already confirmed). */
  async confirmFunding(batchId: string, data: { txHash: string; explorerUrl?: string }): Promise<{ applied: boolean; batch: FundingBatch }> {
    if (!/^\d{1,18}$/.test(String(batchId))) throw new LedgerError('FUNDING_BATCH_NOT_FOUND', 'funding batch not found', { batchId });
    const txHash = text(data?.txHash, 'txHash');
    const explorerUrl = data.explorerUrl === undefined ? null : text(data.explorerUrl, 'explorerUrl', 2048);
    const { rows } = await this.db.query(
      `UPDATE funding_batches SET state = 'confirmed', tx_hash = $2, explorer_url = $3, confirmed_at = now()
       WHERE id = $1 AND state = 'prepared' RETURNING *`,
      [batchId, txHash, explorerUrl],
    );
    if (rows[0]) return { applied: true, batch: toBatch(rows[0]) };
    const current = await this.db.query('SELECT * FROM funding_batches WHERE id = $1', [batchId]);
    if (!current.rows[0]) throw new LedgerError('FUNDING_BATCH_NOT_FOUND', 'funding batch not found', { batchId });
    return { applied: false, batch: toBatch(current.rows[0]) };
  }

  /**
   * Moves a cycle from `from` to `to` only if it is in `from` now (optimistic;
   * `applied: false` with the current cycle otherwise), recording the step and
   * its on-chain transaction. `INVALID_TRANSITION` for a move the state
   * machine does not allow; moving to `funded` needs every claimed earning in
   * a confirmed funding batch (`UNFUNDED_EARNINGS`); `closing -> done` is for
   * an empty cycle only.
   */
  async advance(cycleId: string, from: CycleState, to: CycleState, data: AdvanceData = {}): Promise<AdvanceResult> {
    const id = this.cycleIdParam(cycleId);
    if (!CYCLE_STATES.includes(from) || !CYCLE_STATES.includes(to) || !CYCLE_TRANSITIONS[from].includes(to)) {
      throw new LedgerError('INVALID_TRANSITION', `a settlement cycle cannot move from ${String(from)} to ${String(to)}`, { cycleId, from, to });
    }
    const txHash = data.txHash === undefined ? null : text(data.txHash, 'txHash');
    const explorerUrl = data.explorerUrl === undefined ? null : text(data.explorerUrl, 'explorerUrl', 2048);
    const escrowId = data.escrowId === undefined ? null : text(data.escrowId, 'escrowId');
    const error = data.error === undefined ? null : text(data.error, 'error', 4096);
    const extra = JSON.stringify(data.data ?? {});
    const applied = await this.db.transaction(async (tx) => {
      const { rows } = await tx.query('SELECT state FROM settlement_cycles WHERE id = $1 FOR UPDATE', [id]);
      const row = rows[0];
      if (!row) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
      if (row.state !== from) return false;
      if (to === 'funded') {
        const open = await tx.query(
          `SELECT count(*) AS n FROM earnings e LEFT JOIN funding_batches b ON b.id = e.funding_batch_id
           WHERE e.cycle_id = $1 AND (b.id IS NULL OR b.state <> 'confirmed')`,
          [id],
        );
        if (Number(open.rows[0]?.n ?? 0) > 0) {
          throw new LedgerError('UNFUNDED_EARNINGS', 'the cycle has claimed earnings without a confirmed funding batch', { cycleId, unfunded: Number(open.rows[0]?.n) });
        }
      }
      if (from === 'closing' && to === 'done') {
        const any = await tx.query('SELECT 1 FROM earnings WHERE cycle_id = $1 LIMIT 1', [id]);
        if (any.rows.length > 0) throw new LedgerError('INVALID_TRANSITION', 'only an empty cycle may move from closing to done', { cycleId });
      }
      await tx.query(
        `UPDATE settlement_cycles SET state = $2, version = version + 1, updated_at = now(),
           closed_at = CASE WHEN $2 = 'closing' THEN now() ELSE closed_at END,
           escrow_id = COALESCE($3, escrow_id), error = COALESCE($4, error), data = data || $5::jsonb
         WHERE id = $1`,
        [id, to, escrowId, error, extra],
      );
      await tx.query('INSERT INTO settlement_steps (cycle_id, from_state, to_state, tx_hash, explorer_url) VALUES ($1, $2, $3, $4, $5)', [
        id,
        from,
        to,
        txHash,
        explorerUrl,
      ]);
      return true;
    });
    return { applied, cycle: await this.getCycle(cycleId) };
  }

  /**
   * Merges `data` into a cycle's `data` object (and sets its escrow id when
   * given) without a state move: the settler's durable notes, such as the
   * signed transaction it is about to submit. Refused (`CYCLE_NOT_OPEN`) once
   * the cycle is `done` or `failed`.
   */
  async recordCycleData(cycleId: string, input: { escrowId?: string; data?: Record<string, unknown> }): Promise<SettlementCycle> {
    const id = this.cycleIdParam(cycleId);
    const escrowId = input.escrowId === undefined ? null : text(input.escrowId, 'escrowId');
    const extra = JSON.stringify(input.data ?? {});
    const { rows } = await this.db.query(
      `UPDATE settlement_cycles SET data = data || $2::jsonb, escrow_id = COALESCE($3, escrow_id), version = version + 1, updated_at = now()
       WHERE id = $1 AND state NOT IN ('done', 'failed') RETURNING id`,
      [id, extra, escrowId],
    );
    if (!rows[0]) {
      const current = await this.getCycle(cycleId);
      throw new LedgerError('CYCLE_NOT_OPEN', `the cycle is ${current.state}; its record is final`, { cycleId, state: current.state });
    }
    return this.getCycle(cycleId);
  }

  /** Publisher owners with earnings in no cycle yet (what a settler must pick up). */
  async unsettledOwners(limit = 1000): Promise<string[]> {
    positiveInt(limit, 'limit', 100_000);
    const { rows } = await this.db.query('SELECT DISTINCT publisher_owner FROM earnings WHERE cycle_id IS NULL LIMIT $1', [limit]);
    return rows.map((r) => str(r.publisher_owner)).sort();
  }

  // ---------------------------------------------------------- wallet path

  /**
   * Records the intent of a wallet payment (state `pending`) before anything
   * is sent on chain; a second record with the same account, kind and
   * `callId` returns the first (idempotent).
   */
  async recordWalletPayment(accountId: string, input: WalletPaymentInput): Promise<WalletPayment> {
    text(accountId, 'accountId', 128);
    const callId = text(input?.callId, 'callId');
    if (input.kind !== 'call' && input.kind !== 'topup') invalid('kind must be call or topup', { field: 'kind' });
    positiveAmount(input.amount, 'amount');
    const service = input.service === undefined ? null : text(input.service, 'service');
    const owner = input.publisherOwner === undefined ? null : text(input.publisherOwner, 'publisherOwner');
    const { rows } = await this.db.query(
      `INSERT INTO wallet_payments (account_id, kind, call_id, service, publisher_owner, amount, data)
       VALUES ($1, $2, $3, $4, $5, $6::bigint, $7::jsonb) ON CONFLICT (account_id, call_id, kind) DO NOTHING RETURNING *`,
      [accountId, input.kind, callId, service, owner, input.amount.toString(), JSON.stringify(input.data ?? {})],
    );
    if (rows[0]) return toWalletPayment(rows[0]);
    const existing = await this.db.query('SELECT * FROM wallet_payments WHERE account_id = $1 AND call_id = $2 AND kind = $3', [accountId, callId, input.kind]);
    return toWalletPayment(existing.rows[0] as Row);
  }

  /** Merges notes into a pending wallet payment (e.g. the signed transaction about to be submitted, the escrow id). */
  async noteWalletPayment(paymentId: string, input: { escrowId?: string; data?: Record<string, unknown> }): Promise<WalletPayment> {
    if (!isUuid(paymentId)) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
    const escrowId = input.escrowId === undefined ? null : text(input.escrowId, 'escrowId');
    const { rows } = await this.db.query(
      `UPDATE wallet_payments SET data = data || $2::jsonb, escrow_id = COALESCE($3, escrow_id) WHERE id = $1 AND state = 'pending' RETURNING *`,
      [paymentId, JSON.stringify(input.data ?? {}), escrowId],
    );
    if (rows[0]) return toWalletPayment(rows[0]);
    return this.getWalletPayment(paymentId);
  }

  /**
   * Resolves a pending wallet payment once: `completed` with its transaction,
   * or `failed` with the reason. A `topup` completed here also credits its
   * amount in the same database transaction (journal reference
   * `wallet:<txHash>`), within the top-up limits; `applied: false` when the
   * payment was already resolved.
   */
  async resolveWalletPayment(
    paymentId: string,
    outcome: { state: 'completed'; txHash: string; explorerUrl?: string; escrowId?: string } | { state: 'failed'; error: string },
  ): Promise<{ applied: boolean; payment: WalletPayment; balance: bigint | null }> {
    if (!isUuid(paymentId)) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query('SELECT * FROM wallet_payments WHERE id = $1 FOR UPDATE', [paymentId]);
      const row = rows[0];
      if (!row) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
      const current = toWalletPayment(row);
      if (current.state !== 'pending') return { applied: false, payment: current, balance: null };
      let balance: bigint | null = null;
      let updated: Row[];
      if (outcome.state === 'completed') {
        const txHash = text(outcome.txHash, 'txHash');
        const explorerUrl = outcome.explorerUrl === undefined ? null : text(outcome.explorerUrl, 'explorerUrl', 2048);
        const escrowId = outcome.escrowId === undefined ? null : text(outcome.escrowId, 'escrowId');
        // The USDC is in the treasury: it becomes credits whatever happened to the balance meanwhile.
        if (current.kind === 'topup') balance = (await this.topupIn(tx, current.accountId, current.amount, `wallet:${txHash}`, false)).balance;
        ({ rows: updated } = await tx.query(
          `UPDATE wallet_payments SET state = 'completed', tx_hash = $2, explorer_url = $3, escrow_id = COALESCE($4, escrow_id), resolved_at = now() WHERE id = $1 RETURNING *`,
          [paymentId, txHash, explorerUrl, escrowId],
        ));
      } else {
        const error = text(outcome.error, 'error', 4096);
        ({ rows: updated } = await tx.query(`UPDATE wallet_payments SET state = 'failed', error = $2, resolved_at = now() WHERE id = $1 RETURNING *`, [paymentId, error]));
      }
      return { applied: true, payment: toWalletPayment(updated[0] as Row), balance };
    });
  }

  /** A wallet payment by id. */
  async getWalletPayment(paymentId: string): Promise<WalletPayment> {
    if (!isUuid(paymentId)) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
    const { rows } = await this.db.query('SELECT * FROM wallet_payments WHERE id = $1', [paymentId]);
    if (!rows[0]) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
    return toWalletPayment(rows[0]);
  }

  /** Wallet payments still `pending` (a crash left them): what the gateway reconciles at start. */
  async pendingWalletPayments(limit = 100): Promise<WalletPayment[]> {
    positiveInt(limit, 'limit', 10_000);
    const { rows } = await this.db.query(`SELECT * FROM wallet_payments WHERE state = 'pending' ORDER BY created_at LIMIT $1`, [limit]);
    return rows.map(toWalletPayment);
  }

  private async lockClaimable(tx: Queryable, id: string, cycleId: string): Promise<string> {
    const { rows } = await tx.query('SELECT publisher_owner, state FROM settlement_cycles WHERE id = $1 FOR SHARE', [id]);
    const row = rows[0];
    if (!row) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
    if (!CLAIMABLE.includes(row.state as CycleState)) {
      throw new LedgerError('CYCLE_NOT_OPEN', `the cycle is ${String(row.state)}; earnings can no longer be added`, { cycleId, state: row.state });
    }
    return str(row.publisher_owner);
  }

  private cycleIdParam(cycleId: string): string {
    if (!/^\d{1,18}$/.test(String(cycleId))) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
    return String(cycleId);
  }

  // ----------------------------------------------------------------- verify

  /**
   * Recomputes every balance and hold from the journal and reports each
   * mismatch: account credits vs. the journal's sum, each hold's state vs. its
   * journal rows, posted holds vs. earnings, and conservation (sign-ups +
   * top-ups = credits + held + gross earnings).
   */
  async verify(): Promise<VerifyReport> {
    const mismatches: VerifyMismatch[] = [];
    const balances = await this.db.query(
      `SELECT a.id, a.balance, COALESCE(j.total, 0) AS journal
       FROM accounts a LEFT JOIN (SELECT account_id, sum(delta_balance) AS total FROM journal GROUP BY account_id) j ON j.account_id = a.id
       WHERE a.balance <> COALESCE(j.total, 0)`,
    );
    for (const r of balances.rows) mismatches.push({ kind: 'balance', id: str(r.id), expected: str(r.journal), actual: str(r.balance) });
    const holds = await this.db.query(
      `SELECT h.id, h.state, h.amount, COALESCE(j.held, 0) AS held, j.kinds
       FROM holds h LEFT JOIN (
         SELECT hold_id, sum(delta_held) AS held, string_agg(kind, ',' ORDER BY kind) AS kinds FROM journal WHERE hold_id IS NOT NULL GROUP BY hold_id
       ) j ON j.hold_id = h.id
       WHERE COALESCE(j.held, 0) <> CASE WHEN h.state = 'pending' THEN h.amount ELSE 0 END
          OR j.kinds IS DISTINCT FROM CASE h.state WHEN 'pending' THEN 'hold' WHEN 'posted' THEN 'hold,post' ELSE 'hold,void' END`,
    );
    for (const r of holds.rows) {
      mismatches.push({ kind: 'hold', id: str(r.id), expected: `${str(r.state)} (held ${r.state === 'pending' ? str(r.amount) : '0'})`, actual: `journal ${str(r.kinds ?? 'none')} (held ${str(r.held)})` });
    }
    const earnings = await this.db.query(
      `SELECT h.id, h.state, h.posted_amount, e.gross, j.amount AS journal_gross
       FROM holds h
       LEFT JOIN earnings e ON e.hold_id = h.id
       LEFT JOIN journal j ON j.hold_id = h.id AND j.kind = 'post'
       WHERE (h.state = 'posted') <> (e.id IS NOT NULL)
          OR (e.id IS NOT NULL AND (e.gross <> h.posted_amount OR j.amount IS DISTINCT FROM e.gross))`,
    );
    for (const r of earnings.rows) {
      mismatches.push({ kind: 'earning', id: str(r.id), expected: `${str(r.state)} ${str(r.posted_amount ?? '-')}`, actual: `earning ${str(r.gross ?? 'none')} journal ${str(r.journal_gross ?? 'none')}` });
    }
    const totals = await this.db.query(
      `SELECT
         (SELECT count(*) FROM accounts) AS accounts,
         (SELECT count(*) FROM holds) AS holds,
         (SELECT COALESCE(sum(amount), 0) FROM journal WHERE kind IN ('signup', 'topup')) AS credited,
         (SELECT COALESCE(sum(balance), 0) FROM accounts) AS credits,
         (SELECT COALESCE(sum(amount), 0) FROM holds WHERE state = 'pending') AS held,
         (SELECT COALESCE(sum(gross), 0) FROM earnings) AS earned`,
    );
    const t = totals.rows[0] as Row;
    const sums = { credited: big(t.credited), credits: big(t.credits), held: big(t.held), earned: big(t.earned) };
    if (sums.credited !== sums.credits + sums.held + sums.earned) {
      mismatches.push({ kind: 'conservation', id: '*', expected: sums.credited.toString(), actual: (sums.credits + sums.held + sums.earned).toString() });
    }
    return { ok: mismatches.length === 0, accounts: Number(t.accounts), holds: Number(t.holds), mismatches, totals: sums };
  }
}

export type OpenLedgerOptions = OpenDatabaseOptions & LedgerOptions;

/** Runs the ledger's own migrations on `db`. */
export function migrateLedger(db: Database): Promise<MigrateResult> {
  return migrate(db, LEDGER_MIGRATIONS_DIR, LEDGER_NAMESPACE);
}

/**
 * Opens the database ({@link openDatabase}), applies the ledger migrations
 * and returns the ledger. `ledger.close()` closes the database (and releases
 * the PGlite lock file).
 *
 * @example
 * const ledger = await openLedger({ url: process.env.DATABASE_URL, dataDir: './.farebox/db' });
 */
export async function openLedger(options: OpenLedgerOptions = {}): Promise<Ledger> {
  const db = await openDatabase(options);
  try {
    await migrateLedger(db);
  } catch (error) {
    await db.close();
    throw error;
  }
  return new Ledger(db, options.batch === undefined ? {} : { batch: options.batch });
}
