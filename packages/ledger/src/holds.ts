import { splitFee } from '@farebox/protocol';
import { readBalance } from './accounts.js';
import { Batcher, type Pending } from './batch.js';
import { flushBudgetHolds, type BudgetHoldInput } from './budget-batch.js';
import * as budgets from './budgets.js';
import type { Database } from './db.js';
import { ASYNC_COMMIT_CONDITION, prepared } from './db.js';
import { LedgerError, sqlState } from './errors.js';
import { big, invalid, isUuid, msDate, positiveAmount, positiveInt, str, strOrNull, text, toEarning, toHold, type Row } from './rows.js';
import {
  DEFAULT_HOLD_TIMEOUT_MS,
  LEDGER_MESSAGES,
  type Earning,
  type Hold,
  type HoldOptions,
  type HoldResult,
  type LedgerOptions,
  type PostOptions,
  type ResolveResult,
} from './types.js';
import { leadOf } from './clock.js';

// Two-phase holds: place (debit into a hold), post (charge, record the
// publisher earning) or void (refund), and the reaper; each move is one
// statement, and the call path's holds and posts go by group commit.

interface HoldInput {
  accountId: string;
  amount: bigint;
  callId: string;
  service: string;
  key: string | null;
  timeoutMs: number;
  budget: budgets.Budget | null;
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

// The hold: debit, hold row and journal row in one statement; `commit` makes
// its commit asynchronous (see HoldBook); `owned` stamps the ledger's
// instance ($7, migration 0012) on the hold (a ledger that joined none sends
// the statement without it, which runs on any schema version).
const holdSql = (name: string, commit: string, owned: boolean) =>
  prepared(
    name,
    `
WITH debit AS (
  UPDATE accounts SET balance = balance - $2::bigint
  WHERE id = $1 AND balance >= $2::bigint${commit}
  RETURNING id, balance
), h AS (
  INSERT INTO holds (account_id, amount, call_id, service, idempotency_key, expires_at${owned ? ', instance_id' : ''})
  SELECT id, $2::bigint, $3, $4, $5, now() + make_interval(secs => $6::float8 / 1000)${owned ? ', $7::int8' : ''} FROM debit
  RETURNING *
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'hold', amount, -amount, amount, id FROM h
)
SELECT h.*, debit.balance AS new_balance FROM h, debit`,
  );

const ASYNC_COMMIT = `\n    AND ${ASYNC_COMMIT_CONDITION}`;
/** [without, with] the instance. */
const HOLD_SQL = [holdSql('ledger_hold', '', false), holdSql('ledger_hold_owned', '', true)] as const;
const HOLD_SQL_ASYNC = [holdSql('ledger_hold_async', ASYNC_COMMIT, false), holdSql('ledger_hold_async_owned', ASYNC_COMMIT, true)] as const;

const POST_SQL = prepared(
  'ledger_post',
  `
WITH h AS (
  UPDATE holds SET state = 'posted', posted_amount = $2::bigint, resolved_at = now()
  WHERE id = $1 AND state = 'pending' AND amount >= $2::bigint
  RETURNING *
), e AS (
  INSERT INTO earnings (hold_id, payer_account_id, publisher_owner, service, gross, fee, net)
  SELECT id, account_id, $3, $4, $2::bigint, $5::bigint, $6::bigint FROM h
  RETURNING *
)${budgets.POST_BUDGET_CTE}, j AS (
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
FROM h, e`,
);

const VOID_SQL = prepared(
  'ledger_void',
  `
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
)${budgets.VOID_BUDGET_CTE}
SELECT h.*, back.balance AS new_balance FROM h, back`,
);

// Group commit of key-less holds: migration 0003's function (accounts locked
// in id order; an account whose credits do not cover all of its holds in the
// batch is left to the one-by-one path).
//
// The batches' times come back as whole Unix milliseconds (`epochMs`), which
// the gateway reads with Number(), where a timestamp is text it parses into a
// Date (six a call). date_part's float8 seconds hold a microsecond time within
// 0.0003 ms, so adding 0.0005 before the floor gives the exact millisecond:
// the Date a timestamp parses to (checked against the exact numeric extract
// on four million times). PostgreSQL writes it as fast as the timestamp.
const epochMs = (column: string) => `floor(date_part('epoch', ${column}) * 1000 + 0.0005)::int8`;
// With the instance, migration 0012's six-argument function.
const batchArgs = (owned: boolean) => `$1::text[], $2::bigint[], $3::text[], $4::text[], $5::float8[]${owned ? ', $6::int8' : ''}`;
const holdBatchSql = (name: string, owned: boolean) =>
  prepared(
    name,
    `SELECT o_ord AS ord, o_id AS id, ${epochMs('o_created_at')} AS created_ms, ${epochMs('o_expires_at')} AS expires_ms, o_balance AS new_balance FROM farebox_hold_batch(${batchArgs(owned)})`,
  );
const holdBatchSqlAsync = (name: string, owned: boolean) =>
  prepared(
    name,
    `SELECT o_ord AS ord, o_id AS id, ${epochMs('o_created_at')} AS created_ms, ${epochMs('o_expires_at')} AS expires_ms, o_balance AS new_balance
   FROM (SELECT set_config('synchronous_commit', 'off', true)) AS commit_mode,
        farebox_hold_batch(${batchArgs(owned)})`,
  );
/** [without, with] the instance. */
const HOLD_BATCH_SQL = [holdBatchSql('ledger_hold_batch', false), holdBatchSql('ledger_hold_batch_owned', true)] as const;
const HOLD_BATCH_SQL_ASYNC = [holdBatchSqlAsync('ledger_hold_batch_async', false), holdBatchSqlAsync('ledger_hold_batch_async_owned', true)] as const;

// Group commit of posts that charge exactly the held amount (the call path's
// case). Anything else (a partial charge, a hold already resolved, a
// duplicate in the batch) is not matched and goes through POST_SQL alone.
// A posted hold returns only what its result does not know from the post
// (pg builds an object per row and parses each column it is sent).
const POST_BATCH_SQL = prepared(
  'ledger_post_batch',
  `
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
SELECT h.ord, h.account_id, h.call_id, h.service, h.idempotency_key, h.paid_with,
       ${epochMs('h.expires_at')} AS expires_ms, ${epochMs('h.created_at')} AS created_ms, ${epochMs('h.resolved_at')} AS resolved_ms,
       e.id AS e_id, ${epochMs('e.created_at')} AS e_created_ms, (SELECT balance FROM accounts WHERE id = h.account_id) AS new_balance
FROM h JOIN e ON e.hold_id = h.id`,
);

/**
 * The ledger: credits, two-phase holds, journal, idempotency keys, publisher
 * earnings and settlement bookkeeping, over one {@link Database}.
 *
 * @example
 * const ledger = await openLedger({ dataDir: './.farebox/db' });
 * await ledger.openAccount('acct_1');                       // 5 USD sign-up credit

/**
 * Holds, posts and voids, with group commit of key-less holds and exact
 * posts (see {@link Batcher}).
 */
export class HoldBook {
  /**
   * On a PostgreSQL server a hold commits without waiting for its WAL flush
   * (synchronous_commit off for its transaction only): the call's post, which
   * does wait, is written after it, and PostgreSQL flushes the WAL in order, so
   * the post's durable commit makes the hold durable too before the call is
   * answered. If the server crashes between the two, the hold may be lost with
   * its debit and journal row (one transaction): the credits are as before the
   * call, which was not answered, as after a void. Posts and voids always wait.
   * On embedded PGlite (the gateway's own process) every commit waits.
   */
  private readonly holdSql: readonly [string, string];
  private readonly holdBatchSql: readonly [string, string];
  private readonly budgetHoldSql: readonly [string, string];
  private readonly holdBatcher: Batcher<HoldInput, HoldResult> | undefined;
  private readonly postBatcher: Batcher<PostInput, ResolveResult> | undefined;
  private readonly budgetBatcher: Batcher<BudgetHoldInput, HoldResult> | undefined;

  /** How far the host's clock runs ahead of this machine's (ms): added to every expiry stamped and read here. */
  private readonly lead: () => number;

  /** @param instance this process's instance (migration 0012), stamped on each hold it places; null when it joined none. */
  constructor(
    private readonly db: Database,
    batch: LedgerOptions['batch'],
    now?: LedgerOptions['now'],
    private readonly instance: () => string | null = () => null,
  ) {
    this.lead = leadOf(now);
    const server = db.kind === 'postgres';
    this.holdSql = server ? HOLD_SQL_ASYNC : HOLD_SQL;
    this.holdBatchSql = server ? HOLD_BATCH_SQL_ASYNC : HOLD_BATCH_SQL;
    this.budgetHoldSql = server ? budgets.BUDGET_HOLD_SQL_ASYNC : budgets.BUDGET_HOLD_SQL;
    if (batch !== false) {
      const options = batch === true || batch === undefined ? {} : batch;
      this.holdBatcher = new Batcher((items) => this.flushHolds(items), options);
      this.postBatcher = new Batcher((items) => this.flushPosts(items), options);
      this.budgetBatcher = new Batcher((b) => flushBudgetHolds(db, b, this.instance(), this.lead(), (i) => this.holdOne({ ...i, key: null })), options);
    }
  }

  async hold(accountId: string, amount: bigint, options: HoldOptions): Promise<HoldResult> {
    text(accountId, 'accountId', 128);
    positiveAmount(amount, 'amount');
    const callId = text(options?.callId, 'callId');
    const service = text(options?.service, 'service');
    const key = options.idempotencyKey === undefined ? null : text(options.idempotencyKey, 'idempotencyKey', 255);
    const timeoutMs = options.timeoutMs === undefined ? DEFAULT_HOLD_TIMEOUT_MS : positiveInt(options.timeoutMs, 'timeoutMs', 2_147_483_647);
    const budget = options.budget === undefined ? null : budgets.checkBudget(options.budget);
    const input: HoldInput = { accountId, amount, callId, service, key, timeoutMs, budget };
    if (key === null && budget !== null && this.budgetBatcher) return this.budgetBatcher.submit({ accountId, amount, callId, service, timeoutMs, budget });
    if (key === null && this.holdBatcher) return this.holdBatcher.submit(input);
    return this.holdOne(input);
  }

  private async holdOne({ accountId, amount, callId, service, key, timeoutMs, budget }: HoldInput): Promise<HoldResult> {
    // A key's live hold is found by the unique index (the statement fails as a whole, debit
    // included) or, when the credits no longer cover a second one, by the lookup below.
    let rows: Row[];
    try {
      const instance = this.instance();
      const params = [accountId, amount.toString(), callId, service, key, timeoutMs + this.lead(), ...(budget ? budgets.budgetParams(budget) : [])];
      const sql = budget ? this.budgetHoldSql : this.holdSql;
      ({ rows } = await this.db.query(instance === null ? sql[0] : sql[1], instance === null ? params : [...params, instance]));
    } catch (error) {
      if (budget && budgets.isBudgetViolation(error)) throw await budgets.budgetRefusal(this.db, budget, amount);
      if (key !== null && sqlState(error) === '23505') {
        const existing = await this.liveHoldByKey(accountId, key);
        if (existing) return existing;
      }
      throw error;
    }
    const row = rows[0];
    if (!row) {
      if (key !== null) {
        const existing = await this.liveHoldByKey(accountId, key);
        if (existing) return existing;
      }
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
    const lead = this.lead();
    const instance = this.instance();
    let rows: Row[];
    try {
      ({ rows } = await this.db.query(instance === null ? this.holdBatchSql[0] : this.holdBatchSql[1], [
        batch.map((p) => p.input.accountId),
        batch.map((p) => p.input.amount.toString()),
        batch.map((p) => p.input.callId),
        batch.map((p) => p.input.service),
        batch.map((p) => p.input.timeoutMs + lead),
        ...(instance === null ? [] : [instance]),
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
      if (!row) {
        rest.push(p);
        return;
      }
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
          expiresAt: msDate(row.expires_ms),
          createdAt: msDate(row.created_ms),
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
    const { rows } = await this.db.query(POST_SQL, [holdId, gross.toString(), publisherOwner, service, fee.toString(), net.toString()]);
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
        const { holdId, gross, publisherOwner, service, fee, net } = p.input;
        const accountId = str(row.account_id);
        p.resolve({
          hold: {
            id: holdId,
            accountId,
            amount: gross,
            state: 'posted',
            callId: str(row.call_id),
            service: str(row.service),
            idempotencyKey: strOrNull(row.idempotency_key),
            paidWith: row.paid_with as Hold['paidWith'],
            postedAmount: gross,
            voidReason: null,
            expiresAt: msDate(row.expires_ms),
            createdAt: msDate(row.created_ms),
            resolvedAt: msDate(row.resolved_ms),
          },
          applied: true,
          balance: big(row.new_balance),
          earning: {
            id: str(row.e_id),
            holdId,
            payerAccountId: accountId,
            publisherOwner,
            service,
            gross,
            fee,
            net,
            cycleId: null,
            fundingBatchId: null,
            createdAt: msDate(row.e_created_ms),
          },
        });
        return undefined;
      }),
    );
  }

  async void(holdId: string, reason: string): Promise<ResolveResult> {
    const why = text(reason, 'reason', 1024);
    if (!isUuid(holdId)) throw new LedgerError('HOLD_NOT_FOUND', 'hold not found', { holdId });
    const { rows } = await this.db.query(VOID_SQL, [holdId, why]);
    const row = rows[0];
    if (row) return { hold: toHold(row), applied: true, balance: big(row.new_balance), earning: null };
    return this.finalState(await this.getHold(holdId));
  }

  private async finalState(hold: Hold): Promise<ResolveResult> {
    const { balance } = await readBalance(this.db, hold.accountId);
    let earning: Earning | null = null;
    if (hold.state === 'posted') {
      const { rows } = await this.db.query('SELECT * FROM earnings WHERE hold_id = $1', [hold.id]);
      earning = rows[0] ? toEarning(rows[0]) : null;
    }
    return { hold, applied: false, balance, earning };
  }

  async reapExpiredHolds(olderThanMs?: number, options: { limit?: number } = {}): Promise<{ voided: string[] }> {
    if (olderThanMs !== undefined && (typeof olderThanMs !== 'number' || !Number.isFinite(olderThanMs) || olderThanMs < 0)) {
      invalid('olderThanMs must be a number >= 0', { olderThanMs });
    }
    const limit = options.limit === undefined ? 1000 : positiveInt(options.limit, 'limit', 100_000);
    const { rows } = await this.db.query(
      `SELECT id FROM holds
       WHERE state = 'pending'
         AND (expires_at <= now() + make_interval(secs => $3::float8 / 1000) OR ($1::float8 IS NOT NULL AND created_at <= now() - make_interval(secs => $1::float8 / 1000)))
       ORDER BY created_at LIMIT $2`,
      [olderThanMs ?? null, limit, this.lead()],
    );
    const voided: string[] = [];
    for (const row of rows) {
      const result = await this.void(str(row.id), 'expired: voided by the reaper');
      if (result.applied) voided.push(result.hold.id);
    }
    return { voided };
  }
}
