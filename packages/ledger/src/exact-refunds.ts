import type { Database } from './db.js';
import { big, date, dateOrNull, invalid, positiveInt, str, strOrNull, text, type Row } from './rows.js';
import type { VerifyMismatch } from './types.js';

// Refunds of x402 `exact` payments (migration 0017): the refund's intent and the reversal of the payment's earning in
// one statement, once per payment; the refund transaction recorded signed before it is submitted, and the refund
// closed with it. The gateway's refund reconciler finishes those a crash left pending.

/** A refund of an `exact` payment: from the treasury back to its payer, the amount paid, once. */
export interface ExactRefund {
  /** The payment refunded: its settlement transaction. */
  paymentTxHash: string;
  earningId: string;
  network: string;
  asset: string;
  service: string;
  publisherOwner: string;
  payer: string;
  amount: bigint;
  requestedBy: string;
  requestedAtMs: number;
  state: 'pending' | 'refunded';
  /** The refund transaction recorded before its submission (pending). */
  signed: { hash: string; xdr: string } | null;
  /** The refund transaction the chain applied (refunded). */
  refundTxHash: string | null;
  error: string | null;
  createdAt: Date;
  resolvedAt: Date | null;
}

/** What the owner asks: the payment (its transaction) of `service`, signed by `requestedBy` at `requestedAtMs`. */
export interface ExactRefundRequest {
  paymentTxHash: string;
  service: string;
  requestedBy: string;
  requestedAtMs: number;
  /** How long after its settlement a payment may be refunded (ms). */
  windowMs: number;
}

/** Why a refund was not opened. */
export type ExactRefundRefusal = 'unknown_payment' | 'other_service' | 'not_owner' | 'exists' | 'paid_out' | 'window_closed';

const HASH = /^[0-9a-f]{64}$/;

function hash(value: unknown, name: string): string {
  const h = text(value, name, 128).toLowerCase();
  if (!HASH.test(h)) invalid(`${name} must be 64 hex characters`, { field: name });
  return h;
}

function toRefund(r: Row): ExactRefund {
  return {
    paymentTxHash: str(r.payment_tx_hash),
    earningId: str(r.earning_id),
    network: str(r.network),
    asset: str(r.asset),
    service: str(r.service),
    publisherOwner: str(r.publisher_owner),
    payer: str(r.payer),
    amount: big(r.amount),
    requestedBy: str(r.requested_by),
    requestedAtMs: Number(r.requested_at_ms),
    state: r.state as ExactRefund['state'],
    signed: r.signed_hash ? { hash: str(r.signed_hash), xdr: str(r.signed_xdr) } : null,
    refundTxHash: strOrNull(r.refund_tx_hash),
    error: strOrNull(r.error),
    createdAt: date(r.created_at),
    resolvedAt: dateOrNull(r.resolved_at),
  };
}

/**
 * Opens the refund of a recorded `exact` payment and reverses its earning, in
 * one statement: only a payment of `service` whose owner is `requestedBy`,
 * settled less than `windowMs` ago, whose earning no settlement cycle claimed
 * and that has no refund yet. The reversal takes the earning's row lock, so a
 * claim running at the same time either claims it first (the refund is then
 * `paid_out`) or skips it. Otherwise nothing is written and `refused` says why
 * (with the existing refund for `exists`).
 */
export async function openExactRefund(
  db: Database,
  input: ExactRefundRequest,
): Promise<{ opened: true; refund: ExactRefund } | { opened: false; refused: ExactRefundRefusal; refund: ExactRefund | null }> {
  const tx = hash(input?.paymentTxHash, 'paymentTxHash');
  const service = text(input.service, 'service');
  const owner = text(input.requestedBy, 'requestedBy', 128);
  const at = positiveInt(input.requestedAtMs, 'requestedAtMs', Number.MAX_SAFE_INTEGER);
  const windowMs = positiveInt(input.windowMs, 'windowMs', 86_400_000);
  const { rows } = await db.query(
    `WITH p AS (
       SELECT * FROM exact_payments WHERE tx_hash = $1 AND service = $2 AND publisher_owner = $3
          AND created_at > now() - make_interval(secs => $5::double precision / 1000)
     ), e AS (
       UPDATE earnings SET reversed_at = now()
        WHERE exact_tx_hash = (SELECT tx_hash FROM p) AND cycle_id IS NULL AND reversed_at IS NULL
        RETURNING id
     )
     INSERT INTO exact_refunds (payment_tx_hash, earning_id, network, asset, service, publisher_owner, payer, amount, requested_by, requested_at_ms)
     SELECT p.tx_hash, e.id, p.network, p.asset, p.service, p.publisher_owner, p.payer, p.amount, $3, $4::bigint FROM p, e
     RETURNING *`,
    [tx, service, owner, at, windowMs],
  );
  if (rows[0]) return { opened: true, refund: toRefund(rows[0]) };
  // Why not: read after the fact (nothing was written).
  const existing = await getExactRefund(db, tx);
  if (existing) return { opened: false, refused: 'exists', refund: existing };
  const { rows: found } = await db.query(
    `SELECT p.service, p.publisher_owner, p.created_at > now() - make_interval(secs => $2::double precision / 1000) AS in_window, e.cycle_id
       FROM exact_payments p LEFT JOIN earnings e ON e.exact_tx_hash = p.tx_hash WHERE p.tx_hash = $1`,
    [tx, windowMs],
  );
  const p = found[0];
  const refused: ExactRefundRefusal = !p
    ? 'unknown_payment'
    : p.service !== service
      ? 'other_service'
      : p.publisher_owner !== owner
        ? 'not_owner'
        : p.cycle_id !== null
          ? 'paid_out'
          : p.in_window !== true
            ? 'window_closed'
            : 'paid_out';
  return { opened: false, refused, refund: null };
}

export async function getExactRefund(db: Database, paymentTxHash: string): Promise<ExactRefund | null> {
  const { rows } = await db.query('SELECT * FROM exact_refunds WHERE payment_tx_hash = $1', [hash(paymentTxHash, 'paymentTxHash')]);
  return rows[0] ? toRefund(rows[0]) : null;
}

/** Records the signed refund transaction before it is submitted (a pending refund only); `noted: false` otherwise. */
export async function noteExactRefund(db: Database, paymentTxHash: string, signed: { hash: string; xdr: string }): Promise<{ noted: boolean }> {
  const { rowCount } = await db.query(
    `UPDATE exact_refunds SET signed_hash = $2, signed_xdr = $3, error = NULL WHERE payment_tx_hash = $1 AND state = 'pending'`,
    [hash(paymentTxHash, 'paymentTxHash'), hash(signed?.hash, 'hash'), text(signed.xdr, 'xdr', 65_536)],
  );
  return { noted: (rowCount ?? 0) > 0 };
}

/** Closes a pending refund with the transaction the chain applied; `completed: false` when it was not pending. */
export async function completeExactRefund(
  db: Database,
  paymentTxHash: string,
  refundTxHash: string,
): Promise<{ completed: boolean; refund: ExactRefund | null }> {
  const { rows } = await db.query(
    `UPDATE exact_refunds SET state = 'refunded', refund_tx_hash = $2, error = NULL, resolved_at = now()
      WHERE payment_tx_hash = $1 AND state = 'pending' RETURNING *`,
    [hash(paymentTxHash, 'paymentTxHash'), hash(refundTxHash, 'refundTxHash')],
  );
  if (rows[0]) return { completed: true, refund: toRefund(rows[0]) };
  return { completed: false, refund: await getExactRefund(db, paymentTxHash) };
}

/** Notes why a pending refund is not done yet (the reconciler tries again). */
export async function failExactRefundAttempt(db: Database, paymentTxHash: string, error: string): Promise<void> {
  await db.query(`UPDATE exact_refunds SET error = $2 WHERE payment_tx_hash = $1 AND state = 'pending'`, [
    hash(paymentTxHash, 'paymentTxHash'),
    text(error, 'error', 1000),
  ]);
}

/** Takes up to `limit` pending refunds written before `olderThan`, not taken by another reconciler within `leaseMs` of `now`. */
export async function dueExactRefunds(db: Database, options: { olderThan: Date; now: Date; leaseMs: number; limit?: number }): Promise<ExactRefund[]> {
  const limit = positiveInt(options.limit ?? 50, 'limit', 1000);
  const lease = positiveInt(options.leaseMs, 'leaseMs', 86_400_000);
  const { rows } = await db.query(
    `UPDATE exact_refunds SET checked_at = $2 WHERE payment_tx_hash IN (
       SELECT payment_tx_hash FROM exact_refunds
        WHERE state = 'pending' AND created_at < $1 AND (checked_at IS NULL OR checked_at < $2::timestamptz - make_interval(secs => $3::double precision / 1000))
        ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [options.olderThan, options.now, lease, limit],
  );
  return rows.map(toRefund).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

/**
 * The refund part of `verify()`: an earning is reversed exactly when its payment has a refund, of the payment's
 * amount and payer; a refund still pending an hour after it was opened is named (the reconciler could not finish it).
 */
export async function verifyExactRefunds(db: Database): Promise<VerifyMismatch[]> {
  const { rows } = await db.query(
    `SELECT e.id, e.exact_tx_hash, e.reversed_at IS NOT NULL AS reversed, r.payment_tx_hash AS refund, r.amount, r.payer, p.amount AS paid, p.payer AS paid_by
       FROM earnings e JOIN exact_payments p ON p.tx_hash = e.exact_tx_hash
       LEFT JOIN exact_refunds r ON r.earning_id = e.id
      WHERE (e.reversed_at IS NOT NULL) <> (r.payment_tx_hash IS NOT NULL)
         OR (r.payment_tx_hash IS NOT NULL AND (r.payment_tx_hash <> e.exact_tx_hash OR r.amount <> p.amount OR r.payer <> p.payer))`,
  );
  const found: VerifyMismatch[] = rows.map((r) => ({
    kind: 'exact-refund' as const,
    id: str(r.exact_tx_hash),
    expected: `earning ${str(r.id)} reversed exactly when its payment has a refund of ${str(r.paid)} to ${str(r.paid_by)}`,
    actual: r.refund ? `reversed: ${String(r.reversed)}; refund of ${str(r.amount)} to ${str(r.payer)}` : `reversed: ${String(r.reversed)}; no refund`,
  }));
  const orphans = await db.query(
    `SELECT r.payment_tx_hash, r.earning_id FROM exact_refunds r
      WHERE NOT EXISTS (SELECT 1 FROM earnings e WHERE e.id = r.earning_id AND e.exact_tx_hash = r.payment_tx_hash)`,
  );
  for (const r of orphans.rows) {
    found.push({
      kind: 'exact-refund',
      id: str(r.payment_tx_hash),
      expected: 'the refund names the earning of its payment',
      actual: `earning ${str(r.earning_id)} is not that payment's`,
    });
  }
  const stuck = await db.query(`SELECT * FROM exact_refunds WHERE state = 'pending' AND created_at < now() - interval '1 hour' ORDER BY created_at`);
  for (const r of stuck.rows) {
    const x = toRefund(r);
    found.push({
      kind: 'exact-refund',
      id: x.paymentTxHash,
      expected: `refunded (${x.amount} to ${x.payer}) within an hour`,
      actual: `pending since ${x.createdAt.toISOString()}${x.error ? `: ${x.error}` : ''}`,
    });
  }
  return found;
}

/** The refund statements, each taking the ledger's database (`ledger.db`): what `@farebox/ledger` exports. */
export const exactRefunds = {
  open: openExactRefund,
  get: getExactRefund,
  note: noteExactRefund,
  complete: completeExactRefund,
  failAttempt: failExactRefundAttempt,
  due: dueExactRefunds,
} as const;
