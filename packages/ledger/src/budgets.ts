import type { Queryable } from './db.js';
import { ASYNC_COMMIT_CONDITION, prepared } from './db.js';
import { LedgerError, sqlState } from './errors.js';
import { big, invalid, text } from './rows.js';

// Credential budgets (migration 0013): the in-flight budget of a spending
// policy. A hold placed under a budget adds its amount to the budget's
// `held` in the statement that debits the credits; the CHECK
// `credential_budget_limit` (spent + held <= lim) refuses it as a whole. Posts
// keep what they charged (see below), voids give it back (holds.ts). A wallet
// payment made under a budget reserves it when it is recorded and settles it
// when it is resolved (wallet-payments.ts, migration 0014).
//
// What counts against the limit is the row's `spent + held`. A post leaves
// what it charged in `held` and gives back only the rest, so an exact post (the
// call path's) does not write the budget row at all: the budget's row is then
// written by the holds' statements only, not also by the posts' (which commit
// synchronously and would keep the row locked from the next batch of holds
// through their WAL flush). How much of it is still in flight is read from the
// pending holds and wallet payments (readBudgets): `held` is their sum, and
// `spent` the rest of `spent + held`.

/** The budget a hold or a wallet payment counts against: a credential's period and its current limit (base units). */
export interface Budget {
  /** The credential (an API key's or an OAuth connection's id). */
  credential: string;
  /** The period's name: `day:YYYY-MM-DD`, `week:YYYY-MM-DD` (its Monday), `month:YYYY-MM` or `total`. */
  period: string;
  /** The policy's limit for the period, base units. */
  limit: bigint;
}

/** What a credential spent in a period: posted (`spent`) and in flight (`held`). */
export interface BudgetUse {
  spent: bigint;
  held: bigint;
}

const PERIOD = /^(day:\d{4}-\d{2}-\d{2}|week:\d{4}-\d{2}-\d{2}|month:\d{4}-\d{2}|total)$/;

/** Checks a budget (throws `INVALID_INPUT`). */
export function checkBudget(budget: Budget): Budget {
  text(budget?.credential, 'budget.credential', 128);
  if (typeof budget.period !== 'string' || !PERIOD.test(budget.period))
    invalid('budget.period must be day:, week:, month: or total', { field: 'budget.period' });
  if (typeof budget.limit !== 'bigint' || budget.limit < 0n) invalid('budget.limit must be a bigint >= 0', { field: 'budget.limit' });
  return budget;
}

// The hold of holds.ts with the budget: the budget row is written from the
// debit (no debit, no budget change) and the hold from both, so a refusal of
// either leaves everything as it was. $7-$9: credential, period, limit; $10 the instance.
const budgetHoldSql = (name: string, commit: string, owned: boolean) =>
  prepared(
    name,
    `
WITH debit AS (
  UPDATE accounts SET balance = balance - $2::bigint
  WHERE id = $1 AND balance >= $2::bigint${commit}
  RETURNING id, balance
), budget AS (
  INSERT INTO credential_budgets AS b (credential, period, lim, held)
  SELECT $7, $8, $9::bigint, $2::bigint FROM debit
  ON CONFLICT (credential, period) DO UPDATE SET held = b.held + EXCLUDED.held, lim = EXCLUDED.lim
  RETURNING b.credential
), h AS (
  INSERT INTO holds (account_id, amount, call_id, service, idempotency_key, expires_at, budget_credential, budget_period${owned ? ', instance_id' : ''})
  SELECT debit.id, $2::bigint, $3, $4, $5, now() + make_interval(secs => $6::float8 / 1000), $7, $8${owned ? ', $10::int8' : ''} FROM debit, budget
  RETURNING *
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'hold', amount, -amount, amount, id FROM h
)
SELECT h.*, debit.balance AS new_balance FROM h, debit`,
  );

const ASYNC_COMMIT = `\n    AND ${ASYNC_COMMIT_CONDITION}`;
/** [without, with] the instance; [synchronous, asynchronous] commit. */
export const BUDGET_HOLD_SQL = [budgetHoldSql('ledger_hold_budget', '', false), budgetHoldSql('ledger_hold_budget_owned', '', true)] as const;
export const BUDGET_HOLD_SQL_ASYNC = [
  budgetHoldSql('ledger_hold_budget_async', ASYNC_COMMIT, false),
  budgetHoldSql('ledger_hold_budget_async_owned', ASYNC_COMMIT, true),
] as const;

/** The parameters the budget adds to a hold's ($7-$9). */
export const budgetParams = (b: Budget) => [b.credential, b.period, b.limit.toString()];

/** The CTE a post adds: the part of the hold's amount it does not charge ($2) back out of the budget (an exact post writes nothing). */
export const POST_BUDGET_CTE = `, bud AS (
  UPDATE credential_budgets b SET held = b.held - (h.amount - $2::bigint)
  FROM h WHERE b.credential = h.budget_credential AND b.period = h.budget_period AND h.amount > $2::bigint
)`;
/** The CTE a void adds: the hold's amount out of `held`. */
export const VOID_BUDGET_CTE = `, bud AS (
  UPDATE credential_budgets b SET held = b.held - h.amount
  FROM h WHERE b.credential = h.budget_credential AND b.period = h.budget_period
)`;
/** True for the refusal of the budget's CHECK. */
export function isBudgetViolation(error: unknown): boolean {
  return sqlState(error) === '23514' && (error as { constraint?: unknown }).constraint === 'credential_budget_limit';
}

/** The refusal of `amount` under `budget`: `BUDGET_EXCEEDED` with the limit, what is used and what remains. */
export async function budgetRefusal(db: Queryable, budget: Budget, amount: bigint): Promise<LedgerError> {
  const use = (await readBudgets(db, [budget])).get(key(budget)) ?? { spent: 0n, held: 0n };
  const used = use.spent + use.held;
  const remaining = budget.limit > used ? budget.limit - used : 0n;
  return new LedgerError('BUDGET_EXCEEDED', 'spending limit reached', {
    credential: budget.credential,
    period: budget.period,
    limit: budget.limit.toString(),
    spent: use.spent.toString(),
    held: use.held.toString(),
    remaining: remaining.toString(),
    needed: amount.toString(),
  });
}

const key = (b: { credential: string; period: string }) => `${b.credential}\n${b.period}`;

/** What each credential spent and holds in each period asked for (absent: nothing yet). Keyed `credential\nperiod`. */
export async function readBudgets(db: Queryable, budgets: ReadonlyArray<{ credential: string; period: string }>): Promise<Map<string, BudgetUse>> {
  const out = new Map<string, BudgetUse>();
  if (budgets.length === 0) return out;
  const { rows } = await db.query(
    `SELECT credential, period, (used - held)::bigint AS spent, held::bigint AS held FROM (
       SELECT b.credential, b.period, b.spent + b.held AS used,
              (SELECT COALESCE(sum(h.amount), 0) FROM holds h
                WHERE h.state = 'pending' AND h.budget_credential = b.credential AND h.budget_period = b.period)
            + (SELECT COALESCE(sum(w.amount), 0) FROM wallet_payments w
                WHERE w.state = 'pending' AND w.budget_credential = b.credential AND w.budget_period = b.period) AS held
         FROM credential_budgets b
         JOIN unnest($1::text[], $2::text[]) AS q(credential, period) ON q.credential = b.credential AND q.period = b.period) u`,
    [budgets.map((b) => b.credential), budgets.map((b) => b.period)],
  );
  for (const r of rows) out.set(key({ credential: String(r.credential), period: String(r.period) }), { spent: big(r.spent), held: big(r.held) });
  return out;
}

/** The key of {@link readBudgets}' map. */
export const budgetKey = key;
