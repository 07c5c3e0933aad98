import { splitFee } from '@farebox/protocol';
import type { Database } from './db.js';
import { intentNonce } from './exact-intents.js';
import { big, date, dateOrNull, invalid, positiveAmount, positiveInt, str, text, type Row } from './rows.js';
import type { ExactPayment, ExactPaymentInput, SponsoredFees, VerifyMismatch } from './types.js';

// x402 `exact` payments (migration 0015): one on-chain transfer into the treasury, recorded once per transaction as the
// service's earning; and the network fees the platform's facilitator sponsors per payer and UTC day.

const DAY = /^\d{4}-\d{2}-\d{2}$/;

function day(value: unknown): string {
  if (typeof value !== 'string' || !DAY.test(value) || Number.isNaN(Date.parse(`${value}T00:00:00Z`))) invalid('day must be YYYY-MM-DD', { field: 'day' });
  return value;
}

function fee(value: unknown, name: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > 9_223_372_036_854_775_807n) invalid(`${name} must be a bigint >= 0`, { field: name });
  return value;
}

function toExactPayment(r: Row): ExactPayment {
  return {
    txHash: str(r.tx_hash),
    network: str(r.network),
    asset: str(r.asset),
    payer: str(r.payer),
    payTo: str(r.pay_to),
    service: str(r.service),
    publisherOwner: str(r.publisher_owner),
    amount: big(r.amount),
    feeCharged: big(r.fee_charged),
    earningId: str(r.earning_id),
    holdUntil: dateOrNull(r.hold_until),
    createdAt: date(r.created_at),
  };
}

/**
 * Records a settled payment and its earning in one statement, once per
 * transaction hash: a second record of the same hash (a retried settle)
 * writes nothing and returns the first (`recorded: false`). With
 * `intentNonce`, the same statement closes the payer's pending intent of that
 * authorization (`settled`, with this transaction). With `holdMs`, the
 * earning is held back from settlement batches until that long after the
 * record (`hold_until`, schema 18: a settle-first payment's refund window).
 */
export async function recordExactPayment(db: Database, input: ExactPaymentInput): Promise<{ recorded: boolean; payment: ExactPayment }> {
  const txHash = text(input?.txHash, 'txHash', 128).toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(txHash)) invalid('txHash must be 64 hex characters', { field: 'txHash' });
  const network = text(input.network, 'network', 64);
  const asset = text(input.asset, 'asset', 128);
  const payer = text(input.payer, 'payer', 128);
  const payTo = text(input.payTo, 'payTo', 128);
  const service = text(input.service, 'service');
  const owner = text(input.publisherOwner, 'publisherOwner');
  const amount = positiveAmount(input.amount, 'amount');
  const charged = fee(input.feeCharged, 'feeCharged');
  const nonce = input.intentNonce === undefined ? null : intentNonce(input.intentNonce);
  const holdMs = input.holdMs === undefined || input.holdMs === null ? null : positiveInt(input.holdMs, 'holdMs', 86_400_000);
  const split = splitFee(amount);
  const { rows } = await db.query(
    `WITH i AS (
       UPDATE exact_intents SET state = 'settled', tx_hash = $1, error = NULL, resolved_at = now()
        WHERE $12::text IS NOT NULL AND payer = $4 AND nonce = $12 AND state = 'pending' RETURNING 1
     ), p AS (
       INSERT INTO exact_payments (tx_hash, network, asset, payer, pay_to, service, publisher_owner, amount, fee_charged)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bigint, $9::bigint) ON CONFLICT (tx_hash) DO NOTHING RETURNING *
     ), e AS (
       INSERT INTO earnings (exact_tx_hash, publisher_owner, service, gross, fee, net, hold_until)
       SELECT tx_hash, publisher_owner, service, amount, $10::bigint, $11::bigint,
              CASE WHEN $13::integer IS NULL THEN NULL ELSE now() + make_interval(secs => ($13::integer)::double precision / 1000) END
         FROM p RETURNING id, hold_until
     )
     SELECT p.*, e.id AS earning_id, e.hold_until FROM p, e`,
    [txHash, network, asset, payer, payTo, service, owner, amount.toString(), charged.toString(), split.fee.toString(), split.net.toString(), nonce, holdMs],
  );
  if (rows[0]) return { recorded: true, payment: toExactPayment(rows[0]) };
  const existing = await getExactPayment(db, txHash);
  if (!existing) invalid('exact payment not recorded', { txHash });
  return { recorded: false, payment: existing };
}

/** The payment recorded for a transaction, with its earning's id; null when none is. */
export async function getExactPayment(db: Database, txHash: string): Promise<ExactPayment | null> {
  const { rows } = await db.query(
    'SELECT p.*, e.id AS earning_id, e.hold_until FROM exact_payments p LEFT JOIN earnings e ON e.exact_tx_hash = p.tx_hash WHERE p.tx_hash = $1',
    [text(txHash, 'txHash', 128).toLowerCase()],
  );
  return rows[0] ? toExactPayment(rows[0]) : null;
}

/**
 * Reserves `amount` stroops of sponsored fees for `payer` on `day` (UTC,
 * `YYYY-MM-DD`) in one statement that never lets the day's total pass `bound`,
 * also under concurrent reservations: refused (`reserved: false`, nothing
 * written) when it would. `total` is the day's total after the statement.
 */
export async function reserveSponsoredFee(
  db: Database,
  payer: string,
  on: string,
  amount: bigint,
  bound: bigint,
): Promise<{ reserved: boolean; total: bigint }> {
  text(payer, 'payer', 128);
  day(on);
  fee(amount, 'amount');
  fee(bound, 'bound');
  const { rows } = await db.query(
    `INSERT INTO sponsored_fees AS s (payer, day, total, settles)
     SELECT $1, $2::date, $3::bigint, 1 WHERE $3::bigint <= $4::bigint
     ON CONFLICT (payer, day) DO UPDATE SET total = s.total + EXCLUDED.total, settles = s.settles + 1
       WHERE s.total + EXCLUDED.total <= $4::bigint
     RETURNING total`,
    [payer, on, amount.toString(), bound.toString()],
  );
  if (rows[0]) return { reserved: true, total: big(rows[0].total) };
  return { reserved: false, total: (await sponsoredFees(db, payer, on)).total };
}

/**
 * Gives back `amount` of a reservation (what the network did not charge);
 * `submitted: false` when the transaction never went out, so the settle is
 * not counted either.
 */
export async function releaseSponsoredFee(db: Database, payer: string, on: string, amount: bigint, options: { submitted: boolean }): Promise<SponsoredFees> {
  text(payer, 'payer', 128);
  day(on);
  fee(amount, 'amount');
  const { rows } = await db.query(
    `UPDATE sponsored_fees SET total = GREATEST(total - $3::bigint, 0), settles = GREATEST(settles - $4::int, 0)
     WHERE payer = $1 AND day = $2::date RETURNING total, settles`,
    [payer, on, amount.toString(), options.submitted ? 0 : 1],
  );
  return rows[0] ? { total: big(rows[0].total), settles: Number(rows[0].settles) } : { total: 0n, settles: 0 };
}

/** Whether `payer` has an `exact` payment settled and recorded (any day): the facilitator's newcomers have none. */
export async function exactPayerSettled(db: Database, payer: string): Promise<boolean> {
  text(payer, 'payer', 128);
  const { rows } = await db.query('SELECT 1 FROM exact_payments WHERE payer = $1 LIMIT 1', [payer]);
  return rows.length > 0;
}

/** The fees sponsored for `payer` on `day` and the settles they paid for. */
export async function sponsoredFees(db: Database, payer: string, on: string): Promise<SponsoredFees> {
  text(payer, 'payer', 128);
  day(on);
  const { rows } = await db.query('SELECT total, settles FROM sponsored_fees WHERE payer = $1 AND day = $2::date', [payer, on]);
  return rows[0] ? { total: big(rows[0].total), settles: Number(rows[0].settles) } : { total: 0n, settles: 0 };
}

/**
 * The exact-payment part of `verify()`: every recorded payment has exactly
 * one earning, of its amount, service and owner (the table's keys make a
 * second one impossible; this names a missing or altered one).
 */
export async function verifyExactPayments(db: Database): Promise<VerifyMismatch[]> {
  const { rows } = await db.query(
    `SELECT p.tx_hash, p.amount, p.service, p.publisher_owner, e.id AS earning_id, e.gross, e.service AS e_service, e.publisher_owner AS e_owner
       FROM exact_payments p LEFT JOIN earnings e ON e.exact_tx_hash = p.tx_hash
      WHERE e.id IS NULL OR e.gross <> p.amount OR e.service <> p.service OR e.publisher_owner <> p.publisher_owner`,
  );
  return rows.map((r) => ({
    kind: 'exact-payment' as const,
    id: str(r.tx_hash),
    expected: `one earning of ${str(r.amount)} for ${str(r.service)} of ${str(r.publisher_owner)}`,
    actual: r.earning_id === null ? 'no earning' : `earning ${str(r.earning_id)}: ${str(r.gross)} for ${str(r.e_service)} of ${str(r.e_owner)}`,
  }));
}
