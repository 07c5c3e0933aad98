import type { Database } from './db.js';
import { big, date, dateOrNull, invalid, positiveAmount, positiveInt, str, strOrNull, text, type Row } from './rows.js';
import type { ExactIntent, ExactIntentInput, VerifyMismatch } from './types.js';

// The intent of each x402 `exact` settlement (migration 0016): written before the facilitator submits anything, closed
// by the statement that records the payment (exact-payments.ts), or as failed when nothing moved; the gateway's
// reconciler resolves those left pending from the chain.

/** How a pending intent that moved nothing is closed. */
export interface ExactIntentOutcome {
  state: 'failed' | 'never_settled';
  error: string;
}

/** Which pending intents a reconciler takes: written before `olderThan`, not taken by another within `leaseMs` of `now`. */
export interface DueExactIntents {
  olderThan: Date;
  now: Date;
  leaseMs: number;
  limit?: number;
}

const NONCE = /^-?\d{1,19}$/;
const MAX_LEDGER = 4_294_967_295;

export function intentNonce(value: unknown): string {
  if (typeof value !== 'string' || !NONCE.test(value)) invalid('nonce must be a 64-bit integer as text', { field: 'nonce' });
  return value;
}

function toIntent(r: Row): ExactIntent {
  return {
    payer: str(r.payer),
    nonce: str(r.nonce),
    expirationLedger: Number(r.expiration_ledger),
    startLedger: Number(r.start_ledger),
    network: str(r.network),
    asset: str(r.asset),
    payTo: str(r.pay_to),
    service: str(r.service),
    publisherOwner: str(r.publisher_owner),
    amount: big(r.amount),
    holdMs: r.hold_ms === null || r.hold_ms === undefined ? null : Number(r.hold_ms),
    state: r.state as ExactIntent['state'],
    txHash: strOrNull(r.tx_hash),
    error: strOrNull(r.error),
    resolveBy: date(r.resolve_by),
    createdAt: date(r.created_at),
    resolvedAt: dateOrNull(r.resolved_at),
  };
}

/**
 * Writes the pending intent of a settlement before anything is submitted,
 * once per (payer, nonce): `opened: true` when this call wrote it (new, or a
 * `failed` one opened again for another attempt); otherwise the intent as it
 * is (pending: another settle of the same authorization is under way or was
 * interrupted; settled or never settled: final), and nothing is written.
 */
export async function openExactIntent(db: Database, input: ExactIntentInput): Promise<{ opened: boolean; intent: ExactIntent }> {
  const payer = text(input?.payer, 'payer', 128);
  const nonce = intentNonce(input.nonce);
  const expiration = positiveInt(input.expirationLedger, 'expirationLedger', MAX_LEDGER);
  const start = positiveInt(input.startLedger, 'startLedger', MAX_LEDGER);
  const network = text(input.network, 'network', 64);
  const asset = text(input.asset, 'asset', 128);
  const payTo = text(input.payTo, 'payTo', 128);
  const service = text(input.service, 'service');
  const owner = text(input.publisherOwner, 'publisherOwner');
  const amount = positiveAmount(input.amount, 'amount');
  const holdMs = input.holdMs === undefined || input.holdMs === null ? null : positiveInt(input.holdMs, 'holdMs', 86_400_000);
  if (!(input.resolveBy instanceof Date) || Number.isNaN(input.resolveBy.getTime())) invalid('resolveBy must be a Date', { field: 'resolveBy' });
  const { rows } = await db.query(
    `INSERT INTO exact_intents AS i (payer, nonce, expiration_ledger, start_ledger, network, asset, pay_to, service, publisher_owner, amount, resolve_by, hold_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::bigint, $11, $12::integer)
     ON CONFLICT (payer, nonce) DO UPDATE SET expiration_ledger = EXCLUDED.expiration_ledger, start_ledger = EXCLUDED.start_ledger,
       network = EXCLUDED.network, asset = EXCLUDED.asset, pay_to = EXCLUDED.pay_to, service = EXCLUDED.service,
       publisher_owner = EXCLUDED.publisher_owner, amount = EXCLUDED.amount, resolve_by = EXCLUDED.resolve_by, hold_ms = EXCLUDED.hold_ms,
       state = 'pending', error = NULL, checked_at = NULL, created_at = now(), resolved_at = NULL
       WHERE i.state = 'failed'
     RETURNING *`,
    [payer, nonce, expiration, start, network, asset, payTo, service, owner, amount.toString(), input.resolveBy, holdMs],
  );
  if (rows[0]) return { opened: true, intent: toIntent(rows[0]) };
  const existing = await getExactIntent(db, payer, nonce);
  if (!existing) invalid('exact intent not written', { payer, nonce });
  return { opened: false, intent: existing };
}

export async function getExactIntent(db: Database, payer: string, nonce: string): Promise<ExactIntent | null> {
  const { rows } = await db.query('SELECT * FROM exact_intents WHERE payer = $1 AND nonce = $2', [text(payer, 'payer', 128), intentNonce(nonce)]);
  return rows[0] ? toIntent(rows[0]) : null;
}

/**
 * Closes a pending intent whose authorization moved nothing: `failed` (the
 * settlement was refused or failed; it may be opened again) or
 * `never_settled` (the authorization expired with no transfer on chain;
 * final). `resolved: false` when it was not pending (already resolved).
 */
export async function closeExactIntent(
  db: Database,
  payer: string,
  nonce: string,
  outcome: ExactIntentOutcome,
): Promise<{ resolved: boolean; intent: ExactIntent | null }> {
  if (outcome?.state !== 'failed' && outcome?.state !== 'never_settled') invalid('state must be failed or never_settled', { field: 'state' });
  const error = text(outcome.error, 'error', 1000);
  const { rows } = await db.query(
    `UPDATE exact_intents SET state = $3, error = $4, resolved_at = now() WHERE payer = $1 AND nonce = $2 AND state = 'pending' RETURNING *`,
    [text(payer, 'payer', 128), intentNonce(nonce), outcome.state, error],
  );
  if (rows[0]) return { resolved: true, intent: toIntent(rows[0]) };
  return { resolved: false, intent: await getExactIntent(db, payer, nonce) };
}

/**
 * Takes up to `limit` pending intents written before `olderThan` for a check
 * against the chain, oldest first, skipping those another reconciler took
 * less than `leaseMs` ago (times by the caller's clock): two gateways at once
 * do not ask about the same intent.
 */
export async function dueExactIntents(db: Database, options: DueExactIntents): Promise<ExactIntent[]> {
  const limit = positiveInt(options.limit ?? 50, 'limit', 1000);
  const lease = positiveInt(options.leaseMs, 'leaseMs', 86_400_000);
  const { rows } = await db.query(
    `UPDATE exact_intents SET checked_at = $2 WHERE (payer, nonce) IN (
       SELECT payer, nonce FROM exact_intents
        WHERE state = 'pending' AND created_at < $1 AND (checked_at IS NULL OR checked_at < $2::timestamptz - make_interval(secs => $3::double precision / 1000))
        ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
     RETURNING *`,
    [options.olderThan, options.now, lease, limit],
  );
  return rows.map(toIntent).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

/** The intent part of `verify()`: every intent still pending past its `resolve_by` (the reconciler could not resolve it). */
export async function verifyExactIntents(db: Database): Promise<VerifyMismatch[]> {
  const { rows } = await db.query(`SELECT * FROM exact_intents WHERE state = 'pending' AND resolve_by < now() ORDER BY created_at`);
  return rows.map((r) => {
    const i = toIntent(r);
    return {
      kind: 'exact-intent' as const,
      id: `${i.payer}/${i.nonce}`,
      expected: `resolved by ${i.resolveBy.toISOString()} (settled from the chain, or never settled once ledger ${i.expirationLedger} passed)`,
      actual: `pending since ${i.createdAt.toISOString()}: ${i.amount} for ${i.service} of ${i.publisherOwner}`,
    };
  });
}
