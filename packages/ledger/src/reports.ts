import { PLATFORM_FEE_BPS } from '@farebox/protocol';
import type { Database } from './db.js';
import { big, date, positiveInt, str, strOrNull, text, type Row } from './rows.js';
import type { AnalyticsPoint, CycleState, LedgerTransaction, PaidWith, PlatformStats, PublisherTotals, ServiceStats, TransactionStatus } from './types.js';

// Read models: an account's transactions, publisher earnings and analytics, platform totals.

/** Earnings of cycles in these states count as settled (paid out to the publisher). */
const SETTLED: readonly CycleState[] = ['swept', 'done'];

export async function transactions(db: Database, accountId: string, limit = 50): Promise<LedgerTransaction[]> {
  text(accountId, 'accountId', 128);
  positiveInt(limit, 'limit', 500);
  const { rows } = await db.query(
    `SELECT * FROM (
       (SELECT 'call' AS type, h.id::text AS id, COALESCE(h.posted_amount, h.amount) AS amount, h.service,
               fb.tx_hash AS tx_signature, fb.explorer_url,
               CASE h.state WHEN 'pending' THEN 'pending' WHEN 'posted' THEN 'completed' ELSE 'refunded' END AS status,
               h.paid_with, NULL::text AS note, h.created_at, 1 AS ord, h.call_id, h.idempotency_key
        FROM holds h
        LEFT JOIN earnings e ON e.hold_id = h.id
        LEFT JOIN funding_batches fb ON fb.id = e.funding_batch_id AND fb.state = 'confirmed'
        WHERE h.account_id = $1
        ORDER BY h.created_at DESC LIMIT $2)
       UNION ALL
       (SELECT 'call', w.id::text, w.amount, w.service, w.tx_hash, w.explorer_url,
               w.state, 'wallet', w.error, w.created_at, 1, w.call_id, w.data->>'idempotencyKey'
        FROM wallet_payments w WHERE w.account_id = $1 AND w.kind = 'call'
        ORDER BY w.created_at DESC LIMIT $2)
       UNION ALL
       (SELECT 'topup', j.id::text, j.amount, NULL, w.tx_hash, w.explorer_url, 'completed',
               CASE WHEN w.id IS NOT NULL THEN 'wallet' END,
               CASE WHEN j.kind = 'signup' THEN 'signup' WHEN w.id IS NOT NULL THEN NULL ELSE j.reference END, j.created_at, 0,
               NULL::text, NULL::text
        FROM journal j
        LEFT JOIN wallet_payments w ON w.account_id = j.account_id AND w.kind = 'topup' AND w.state = 'completed'
                                   AND j.reference = 'wallet:' || w.tx_hash
        WHERE j.account_id = $1 AND j.kind IN ('signup', 'topup')
        ORDER BY j.id DESC LIMIT $2)
       UNION ALL
       (SELECT 'topup', w.id::text, w.amount, NULL, w.data->>'hash', w.explorer_url, w.state, 'wallet', w.error, w.created_at, 0,
               NULL::text, NULL::text
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
    callId: strOrNull(r.call_id),
    idempotencyKey: strOrNull(r.idempotency_key),
    createdAt: date(r.created_at),
  }));
}

export async function publisherTotals(db: Database, publisherOwner: string): Promise<PublisherTotals> {
  text(publisherOwner, 'publisherOwner');
  const { rows } = await db.query(
    `WITH per_cycle AS (
       SELECT e.cycle_id, (c.state = ANY($2::text[])) AS settled, count(*) AS calls,
              sum(e.gross) AS gross, sum(e.fee) AS fee, sum(e.net) AS net
       FROM earnings e LEFT JOIN settlement_cycles c ON c.id = e.cycle_id
       WHERE e.publisher_owner = $1 AND e.reversed_at IS NULL
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

export async function publisherAnalytics(db: Database, publisherOwner: string, days = 30): Promise<AnalyticsPoint[]> {
  text(publisherOwner, 'publisherOwner');
  positiveInt(days, 'days', 90);
  const { rows } = await db.query(
    `WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS d),
     series AS (SELECT (SELECT d FROM today) - k AS day FROM generate_series(0, $2::int - 1) AS k),
     agg AS (
       SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS calls,
              sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net
       FROM earnings
       WHERE publisher_owner = $1 AND reversed_at IS NULL
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

export async function serviceStats(db: Database, publisherOwner: string): Promise<ServiceStats[]> {
  text(publisherOwner, 'publisherOwner');
  const { rows } = await db.query(
    `SELECT service, count(*) AS calls, sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net
     FROM earnings WHERE publisher_owner = $1 AND reversed_at IS NULL GROUP BY service ORDER BY service`,
    [publisherOwner],
  );
  return rows.map((r) => ({ service: str(r.service), calls: Number(r.calls), gross: big(r.gross), fee: big(r.fee), earned: big(r.net) }));
}

export async function platformStats(db: Database): Promise<PlatformStats> {
  const { rows } = await db.query(
    `SELECT
       (SELECT count(*) FROM accounts) AS accounts,
       (SELECT COALESCE(sum(balance), 0) FROM accounts) AS credits,
       (SELECT COALESCE(sum(amount), 0) FROM holds WHERE state = 'pending') AS held,
       (SELECT COALESCE(sum(amount), 0) FROM journal WHERE kind = 'topup') AS topups,
       (SELECT COALESCE(sum(amount), 0) FROM journal WHERE kind = 'signup') AS signups,
       e.calls, e.gross, e.fee, e.net
     FROM (SELECT count(*) AS calls, COALESCE(sum(gross), 0) AS gross, COALESCE(sum(fee), 0) AS fee, COALESCE(sum(net), 0) AS net FROM earnings WHERE reversed_at IS NULL) e`,
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
