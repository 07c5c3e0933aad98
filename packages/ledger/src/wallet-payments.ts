import { budgetRefusal, checkBudget, isBudgetViolation } from './budgets.js';
import type { Database, Queryable } from './db.js';
import { LedgerError } from './errors.js';
import { topupIn } from './accounts.js';
import { big, date, invalid, isUuid, positiveAmount, positiveInt, str, text, toWalletPayment, type Row } from './rows.js';
import type { LedgerHooks, WalletCredit, WalletPayment, WalletPaymentInput } from './types.js';

// The wallet path: payments from an account's own wallet, recorded before they are sent.

export async function recordWalletPayment(db: Database, accountId: string, input: WalletPaymentInput): Promise<WalletPayment> {
  text(accountId, 'accountId', 128);
  const callId = text(input?.callId, 'callId');
  if (input.kind !== 'call' && input.kind !== 'topup') invalid('kind must be call or topup', { field: 'kind' });
  positiveAmount(input.amount, 'amount');
  const service = input.service === undefined ? null : text(input.service, 'service');
  const owner = input.publisherOwner === undefined ? null : text(input.publisherOwner, 'publisherOwner');
  const budget = input.budget === undefined ? null : checkBudget(input.budget);
  // The budget's reservation is written from the inserted row (a repeated record reserves nothing again), in the
  // same statement: the budget's CHECK refuses the payment with it, and nothing is recorded.
  let rows: Row[];
  try {
    ({ rows } = await db.query(
      `WITH p AS (
         INSERT INTO wallet_payments (account_id, kind, call_id, service, publisher_owner, amount, data, budget_credential, budget_period)
         VALUES ($1, $2, $3, $4, $5, $6::bigint, $7::jsonb, $8, $9) ON CONFLICT (account_id, call_id, kind) DO NOTHING RETURNING *
       ), b AS (
         INSERT INTO credential_budgets AS b (credential, period, lim, held)
         SELECT p.budget_credential, p.budget_period, $10::bigint, p.amount FROM p WHERE p.budget_credential IS NOT NULL
         ON CONFLICT (credential, period) DO UPDATE SET held = b.held + EXCLUDED.held, lim = EXCLUDED.lim
       )
       SELECT * FROM p`,
      [
        accountId,
        input.kind,
        callId,
        service,
        owner,
        input.amount.toString(),
        JSON.stringify(input.data ?? {}),
        budget?.credential ?? null,
        budget?.period ?? null,
        budget ? budget.limit.toString() : null,
      ],
    ));
  } catch (error) {
    if (budget && isBudgetViolation(error)) throw await budgetRefusal(db, budget, input.amount);
    throw error;
  }
  if (rows[0]) return toWalletPayment(rows[0]);
  const existing = await db.query('SELECT * FROM wallet_payments WHERE account_id = $1 AND call_id = $2 AND kind = $3', [accountId, callId, input.kind]);
  return toWalletPayment(existing.rows[0] as Row);
}

export async function noteWalletPayment(db: Database, paymentId: string, input: { escrowId?: string; data?: Record<string, unknown> }): Promise<WalletPayment> {
  if (!isUuid(paymentId)) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
  const escrowId = input.escrowId === undefined ? null : text(input.escrowId, 'escrowId');
  const { rows } = await db.query(
    `UPDATE wallet_payments SET data = data || $2::jsonb, escrow_id = COALESCE($3, escrow_id) WHERE id = $1 AND state = 'pending' RETURNING *`,
    [paymentId, JSON.stringify(input.data ?? {}), escrowId],
  );
  if (rows[0]) return toWalletPayment(rows[0]);
  return getWalletPayment(db, paymentId);
}

export async function resolveWalletPayment(
  db: Database,
  paymentId: string,
  outcome: { state: 'completed'; txHash: string; explorerUrl?: string; escrowId?: string } | { state: 'failed'; error: string },
  hooks: LedgerHooks = {},
): Promise<{ applied: boolean; payment: WalletPayment; balance: bigint | null }> {
  if (!isUuid(paymentId)) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
  return db.transaction(async (tx) => {
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
      if (current.kind === 'topup') {
        // One credit per on-chain transaction: the claim and the credit commit together, and the primary key
        // refuses a second claim (a concurrent one waits for the first to commit, then finds it).
        const claim = await tx.query(
          `INSERT INTO wallet_credits (tx_hash, payment_id, account_id, amount) VALUES ($1, $2, $3, $4::bigint) ON CONFLICT DO NOTHING RETURNING tx_hash`,
          [txHash, paymentId, current.accountId, current.amount.toString()],
        );
        if (claim.rows.length === 0) {
          const error = `transaction ${txHash} already backs another credit; nothing was credited for it`;
          ({ rows: updated } = await tx.query(`UPDATE wallet_payments SET state = 'failed', error = $2, resolved_at = now() WHERE id = $1 RETURNING *`, [
            paymentId,
            error,
          ]));
          await settleReservation(tx, current, false);
          return { applied: true, payment: toWalletPayment(updated[0] as Row), balance: null };
        }
        // The USDC is in the treasury: it becomes credits whatever happened to the balance meanwhile.
        balance = (await topupIn(tx, current.accountId, current.amount, `wallet:${txHash}`, false)).balance;
      }
      ({ rows: updated } = await tx.query(
        `UPDATE wallet_payments SET state = 'completed', tx_hash = $2, explorer_url = $3, escrow_id = COALESCE($4, escrow_id), resolved_at = now() WHERE id = $1 RETURNING *`,
        [paymentId, txHash, explorerUrl, escrowId],
      ));
    } else {
      const error = text(outcome.error, 'error', 4096);
      ({ rows: updated } = await tx.query(`UPDATE wallet_payments SET state = 'failed', error = $2, resolved_at = now() WHERE id = $1 RETURNING *`, [
        paymentId,
        error,
      ]));
    }
    await settleReservation(tx, current, outcome.state === 'completed');
    const payment = toWalletPayment(updated[0] as Row);
    if (balance !== null && payment.state === 'completed')
      await hooks.topupCredited?.(tx, { accountId: payment.accountId, amount: payment.amount, reference: `wallet:${payment.txHash}`, balance, payment });
    return { applied: true, payment, balance };
  });
}

/** A resolved payment's budget reservation (migration 0014): spent when the payment completed, given back otherwise. */
async function settleReservation(tx: Queryable, payment: WalletPayment, paid: boolean): Promise<void> {
  if (!payment.budget) return;
  await tx.query('UPDATE credential_budgets SET held = held - $3::bigint, spent = spent + $4::bigint WHERE credential = $1 AND period = $2', [
    payment.budget.credential,
    payment.budget.period,
    payment.amount.toString(),
    paid ? payment.amount.toString() : '0',
  ]);
}

export async function getWalletPayment(db: Database, paymentId: string): Promise<WalletPayment> {
  if (!isUuid(paymentId)) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
  const { rows } = await db.query('SELECT * FROM wallet_payments WHERE id = $1', [paymentId]);
  if (!rows[0]) throw new LedgerError('INVALID_INPUT', 'wallet payment not found', { paymentId });
  return toWalletPayment(rows[0]);
}

export async function pendingWalletPayments(db: Database, limit = 100): Promise<WalletPayment[]> {
  positiveInt(limit, 'limit', 10_000);
  const { rows } = await db.query(`SELECT * FROM wallet_payments WHERE state = 'pending' ORDER BY created_at LIMIT $1`, [limit]);
  return rows.map(toWalletPayment);
}

/**
 * Credits that wallet payments back (one per on-chain transaction), in the
 * order they were claimed, after the `after` cursor (a credit's `seq`): what
 * the gateway's audit checks against the chain.
 */
export async function walletCredits(db: Database, options: { after?: bigint; limit?: number } = {}): Promise<WalletCredit[]> {
  const limit = options.limit ?? 500;
  positiveInt(limit, 'limit', 10_000);
  const { rows } = await db.query(
    `SELECT seq, tx_hash, payment_id, account_id, amount, created_at FROM wallet_credits WHERE seq > $1::bigint ORDER BY seq LIMIT $2`,
    [(options.after ?? 0n).toString(), limit],
  );
  return rows.map((r) => ({
    seq: big(r.seq),
    txHash: str(r.tx_hash),
    paymentId: str(r.payment_id),
    accountId: str(r.account_id),
    amount: big(r.amount),
    createdAt: date(r.created_at),
  }));
}
