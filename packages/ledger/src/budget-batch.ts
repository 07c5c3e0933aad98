import type { Pending } from './batch.js';
import type { Budget } from './budgets.js';
import type { Database } from './db.js';
import { ASYNC_COMMIT_CONDITION, prepared } from './db.js';
import { sqlState } from './errors.js';
import { big, msDate, str, type Row } from './rows.js';
import type { HoldResult } from './types.js';

// Group commit of holds under credential budgets (the call path of keys and
// connections with a spending policy): one statement for a batch, as for
// holds without a budget. Accounts are locked in id order and debited by the
// sum of their holds where the credits cover it; the budgets of the holds so
// placed are reserved, grouped per budget row, in row order; a budget that
// does not fit makes the CHECK refuse the statement as a whole, and the batch
// then goes one by one (each hold refused or placed on its own).

/** A key-less hold under a budget, as the batch takes it. */
export interface BudgetHoldInput {
  accountId: string;
  amount: bigint;
  callId: string;
  service: string;
  timeoutMs: number;
  budget: Budget;
}

const epochMs = (column: string) => `floor(date_part('epoch', ${column}) * 1000 + 0.0005)::int8`;

const batchSql = (name: string, commit: boolean, owned: boolean) =>
  prepared(
    name,
    `
WITH input AS (
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::text[], $8::bigint[])
    WITH ORDINALITY AS i(account_id, amount, call_id, service, timeout_ms, credential, period, lim, ord)
), locked AS (
  SELECT a.id FROM accounts a WHERE a.id IN (SELECT account_id FROM input)${commit ? ` AND ${ASYNC_COMMIT_CONDITION}` : ''} ORDER BY a.id FOR UPDATE
), debit AS (
  UPDATE accounts a SET balance = a.balance - t.total
  FROM (SELECT i.account_id, sum(i.amount)::bigint AS total FROM input i JOIN locked l ON l.id = i.account_id GROUP BY i.account_id) t
  WHERE a.id = t.account_id AND a.balance >= t.total
  RETURNING a.id, a.balance
), placed AS MATERIALIZED (
  SELECT farebox_uuid_v7() AS hold_id, i.*,
         (d.balance + sum(i.amount) OVER (PARTITION BY i.account_id) - sum(i.amount) OVER (PARTITION BY i.account_id ORDER BY i.ord))::bigint AS balance_after
    FROM input i JOIN debit d ON d.id = i.account_id
), budget AS (
  INSERT INTO credential_budgets AS b (credential, period, lim, held)
  SELECT credential, period, max(lim), sum(amount)::bigint FROM placed GROUP BY credential, period ORDER BY credential, period
  ON CONFLICT (credential, period) DO UPDATE SET held = b.held + EXCLUDED.held, lim = EXCLUDED.lim
  RETURNING b.credential
), h AS (
  INSERT INTO holds (id, account_id, amount, call_id, service, expires_at, budget_credential, budget_period${owned ? ', instance_id' : ''})
  SELECT p.hold_id, p.account_id, p.amount, p.call_id, p.service, now() + make_interval(secs => p.timeout_ms / 1000), p.credential, p.period${owned ? ', $9::int8' : ''}
    FROM placed p WHERE EXISTS (SELECT 1 FROM budget)
  RETURNING holds.id, holds.created_at, holds.expires_at
), j AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT p.account_id, 'hold', p.amount, -p.amount, p.amount, p.hold_id FROM placed p JOIN h ON h.id = p.hold_id
)
SELECT p.ord, h.id, ${epochMs('h.created_at')} AS created_ms, ${epochMs('h.expires_at')} AS expires_ms, p.balance_after AS new_balance
  FROM placed p JOIN h ON h.id = p.hold_id`,
  );

/** [synchronous, asynchronous commit][without, with the instance]. */
const SQL = [
  [batchSql('ledger_hold_budget_batch', false, false), batchSql('ledger_hold_budget_batch_owned', false, true)],
  [batchSql('ledger_hold_budget_batch_async', true, false), batchSql('ledger_hold_budget_batch_async_owned', true, true)],
] as const;

/**
 * Places a batch of budget holds in one statement; what it leaves undecided
 * (credits short, a budget refused, an error with a SQLSTATE) goes one by one
 * through `one`, in submission order.
 */
export async function flushBudgetHolds(
  db: Database,
  batch: Array<Pending<BudgetHoldInput, HoldResult>>,
  instance: string | null,
  lead: number,
  one: (input: BudgetHoldInput) => Promise<HoldResult>,
): Promise<void> {
  const byOne = (p: Pending<BudgetHoldInput, HoldResult>) => one(p.input).then(p.resolve, p.reject);
  if (batch.length === 1) return byOne(batch[0]!);
  let rows: Row[] = [];
  try {
    const sql = SQL[db.kind === 'postgres' ? 1 : 0][instance === null ? 0 : 1];
    ({ rows } = await db.query(sql, [
      batch.map((p) => p.input.accountId),
      batch.map((p) => p.input.amount.toString()),
      batch.map((p) => p.input.callId),
      batch.map((p) => p.input.service),
      batch.map((p) => p.input.timeoutMs + lead),
      batch.map((p) => p.input.budget.credential),
      batch.map((p) => p.input.budget.period),
      batch.map((p) => p.input.budget.limit.toString()),
      ...(instance === null ? [] : [instance]),
    ]));
  } catch (error) {
    // Without a SQLSTATE the batch may have committed before the connection failed: report it rather than hold twice.
    if (sqlState(error) === undefined) {
      for (const p of batch) p.reject(error);
      return;
    }
    rows = [];
  }
  const placed = new Map(rows.map((r) => [Number(r.ord), r]));
  const rest: Array<Pending<BudgetHoldInput, HoldResult>> = [];
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
  for (const p of rest) await byOne(p);
}
