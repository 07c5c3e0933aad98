import { PLATFORM_FEE_BPS } from '@farebox/protocol';
import type { Database, Queryable } from './db.js';
import { LedgerError } from './errors.js';
import { big, date, dateOrNull, invalid, positiveInt, str, strOrNull, text, toBatch } from './rows.js';
import {
  CYCLE_STATES,
  CYCLE_TRANSITIONS,
  type AdvanceData,
  type AdvanceResult,
  type ClaimResult,
  type CycleState,
  type LedgerHooks,
  type SettlementCycle,
} from './types.js';

// Settlement cycles: one open cycle per publisher owner, the state machine, claimed earnings.

/**
 * An earning that is no channel payment's, or whose voucher the channel's withdrawn covers (schema 19): a channel
 * payment's money is in the treasury only once a settle or close withdrew it. (Each earning's check is two primary
 * key lookups, and only for channel earnings.)
 */
const CHANNEL_WITHDRAWN = `(earnings.channel_payment_id IS NULL OR EXISTS (
  SELECT 1 FROM channel_payments cp JOIN payment_channels pc ON pc.channel = cp.channel
   WHERE cp.id = earnings.channel_payment_id AND pc.withdrawn >= cp.amount))`;

/** Earnings may be claimed and funding batches prepared in these states. */
const CLAIMABLE: readonly CycleState[] = ['open', 'closing', 'deployed'];

export async function openCycle(db: Database, publisherOwner: string): Promise<SettlementCycle> {
  text(publisherOwner, 'publisherOwner');
  for (let i = 0; i < 10; i++) {
    const { rows } = await db.query(
      `INSERT INTO settlement_cycles (publisher_owner) VALUES ($1)
       ON CONFLICT (publisher_owner) WHERE state = 'open' DO NOTHING RETURNING id`,
      [publisherOwner],
    );
    const created = rows[0];
    if (created) return getCycle(db, str(created.id));
    const open = await db.query(`SELECT id FROM settlement_cycles WHERE publisher_owner = $1 AND state = 'open'`, [publisherOwner]);
    if (open.rows[0]) return getCycle(db, str(open.rows[0].id));
  }
  throw new LedgerError('CYCLE_NOT_OPEN', 'could not open a settlement cycle', { publisherOwner });
}

export async function getCycle(db: Database, cycleId: string): Promise<SettlementCycle> {
  const id = cycleIdParam(cycleId);
  const { rows } = await db.query(
    // The totals are the cycle's own (migration 0006: each claim adds to them), not a sum over its earnings.
    `SELECT c.*, c.claimed_calls AS calls, c.claimed_gross AS gross, c.claimed_fee AS fee, c.claimed_net AS net
     FROM settlement_cycles c WHERE c.id = $1`,
    [id],
  );
  const r = rows[0];
  if (!r) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
  const [steps, batches] = await Promise.all([
    db.query('SELECT * FROM settlement_steps WHERE cycle_id = $1 ORDER BY id', [id]),
    db.query('SELECT * FROM funding_batches WHERE cycle_id = $1 ORDER BY id', [id]),
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

export async function listCycles(db: Database, publisherOwner: string, limit = 50): Promise<SettlementCycle[]> {
  text(publisherOwner, 'publisherOwner');
  positiveInt(limit, 'limit', 200);
  const { rows } = await db.query('SELECT id FROM settlement_cycles WHERE publisher_owner = $1 ORDER BY id DESC LIMIT $2', [publisherOwner, limit]);
  return Promise.all(rows.map((r) => getCycle(db, str(r.id))));
}

export async function activeCycles(db: Database, states?: readonly CycleState[]): Promise<SettlementCycle[]> {
  const wanted = states ?? CYCLE_STATES.filter((s) => s !== 'done' && s !== 'failed');
  for (const s of wanted) if (!CYCLE_STATES.includes(s)) invalid(`unknown cycle state ${String(s)}`);
  const { rows } = await db.query('SELECT id FROM settlement_cycles WHERE state = ANY($1::text[]) ORDER BY id', [wanted]);
  return Promise.all(rows.map((r) => getCycle(db, str(r.id))));
}

export async function claimEarnings(db: Database, cycleId: string, options: { limit?: number; batch?: boolean } = {}): Promise<ClaimResult> {
  const id = cycleIdParam(cycleId);
  const limit = options.limit === undefined ? 10_000 : positiveInt(options.limit, 'limit', 1_000_000);
  const batch = options.batch === true;
  return db.transaction(async (tx) => {
    // The cycle's row is locked as its update will lock it: two claims on one cycle take turns.
    const owner = await lockClaimable(tx, id, cycleId, 'FOR NO KEY UPDATE');
    // One statement: the earnings picked (locked, so concurrent claimers of
    // the owner's cycles take disjoint sets), summed where they are (a tick
    // claims up to 10,000, and reading each back cost the gateway 40-70 ms of
    // its event loop), their funding batch when asked (each earning is then
    // written once, not once for its cycle and again for its batch), the
    // earnings assigned, and the sums added to the cycle's totals.
    // The fee is the cycle's (schema 11): each earning's is the fee on the
    // cycle's running total up to and including it, less the fee on the total
    // before it, so the cycle's fee is always floor(gross x 5 %) of its whole
    // gross, what its escrow takes at release, however the calls were priced.
    // A reversed earning (a refunded x402 payment) is never claimed, a held one (a settle-first payment's refund
    // window, schema 18) not before its hold ends: a refund within the window finds it unclaimed. A channel payment's
    // earning (schema 19) not before the treasury withdrew its voucher (the channel's withdrawn covers the voucher's
    // amount): only then is its money in the treasury.
    const { rows } = await tx.query(
      `WITH picked AS (
         SELECT id, gross FROM earnings
         WHERE publisher_owner = $2 AND cycle_id IS NULL AND reversed_at IS NULL AND (hold_until IS NULL OR hold_until <= now())
           AND ${CHANNEL_WITHDRAWN}
         ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED
       ), split AS (
         SELECT p.id, p.gross,
                (div((c.claimed_gross + p.run) * $5::numeric, 10000) - div((c.claimed_gross + p.run - p.gross) * $5::numeric, 10000))::bigint AS fee
         FROM (SELECT id, gross, sum(gross) OVER (ORDER BY id) AS run FROM picked) p
         CROSS JOIN settlement_cycles c WHERE c.id = $1
       ), sums AS (
         SELECT count(*) AS calls, coalesce(sum(gross), 0) AS gross, coalesce(sum(fee), 0) AS fee, coalesce(sum(gross - fee), 0) AS net FROM split
       ), batch AS (
         INSERT INTO funding_batches (cycle_id, amount)
         SELECT $1, s.gross FROM sums s WHERE $4::boolean AND s.calls > 0
         RETURNING *
       ), claimed AS (
         UPDATE earnings SET cycle_id = $1, funding_batch_id = (SELECT b.id FROM batch b), fee = p.fee, net = p.gross - p.fee
         FROM split p WHERE earnings.id = p.id
       ), totals AS (
         UPDATE settlement_cycles c
            SET claimed_calls = c.claimed_calls + s.calls, claimed_gross = c.claimed_gross + s.gross,
                claimed_fee = c.claimed_fee + s.fee, claimed_net = c.claimed_net + s.net
           FROM sums s WHERE c.id = $1 AND s.calls > 0
       )
       SELECT s.calls AS s_calls, s.gross AS s_gross, s.fee AS s_fee, s.net AS s_net, b.*
       FROM sums s LEFT JOIN batch b ON true`,
      [id, owner, limit, batch, PLATFORM_FEE_BPS.toString()],
    );
    const r = rows[0]!;
    const claimed: ClaimResult = { claimed: Number(r.s_calls), gross: big(r.s_gross), fee: big(r.s_fee), net: big(r.s_net) };
    return batch ? { ...claimed, batch: r.id === null || r.id === undefined ? null : toBatch(r) } : claimed;
  });
}

export async function advance(
  db: Database,
  cycleId: string,
  from: CycleState,
  to: CycleState,
  data: AdvanceData = {},
  hooks: LedgerHooks = {},
): Promise<AdvanceResult> {
  const id = cycleIdParam(cycleId);
  if (!CYCLE_STATES.includes(from) || !CYCLE_STATES.includes(to) || !CYCLE_TRANSITIONS[from].includes(to)) {
    throw new LedgerError('INVALID_TRANSITION', `a settlement cycle cannot move from ${String(from)} to ${String(to)}`, { cycleId, from, to });
  }
  const txHash = data.txHash === undefined ? null : text(data.txHash, 'txHash');
  const explorerUrl = data.explorerUrl === undefined ? null : text(data.explorerUrl, 'explorerUrl', 2048);
  const escrowId = data.escrowId === undefined ? null : text(data.escrowId, 'escrowId');
  const error = data.error === undefined ? null : text(data.error, 'error', 4096);
  const extra = JSON.stringify(data.data ?? {});
  const applied = await db.transaction(async (tx) => {
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
        throw new LedgerError('UNFUNDED_EARNINGS', 'the cycle has claimed earnings without a confirmed funding batch', {
          cycleId,
          unfunded: Number(open.rows[0]?.n),
        });
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
    await hooks.cycleMoved?.(tx, { cycleId: String(cycleId), from, to, txHash, explorerUrl, escrowId, error, data: data.data ?? {} });
    return true;
  });
  return { applied, cycle: await getCycle(db, cycleId) };
}

export async function recordCycleData(db: Database, cycleId: string, input: { escrowId?: string; data?: Record<string, unknown> }): Promise<SettlementCycle> {
  const id = cycleIdParam(cycleId);
  const escrowId = input.escrowId === undefined ? null : text(input.escrowId, 'escrowId');
  const extra = JSON.stringify(input.data ?? {});
  const { rows } = await db.query(
    `UPDATE settlement_cycles SET data = data || $2::jsonb, escrow_id = COALESCE($3, escrow_id), version = version + 1, updated_at = now()
     WHERE id = $1 AND state NOT IN ('done', 'failed') RETURNING id`,
    [id, extra, escrowId],
  );
  if (!rows[0]) {
    const current = await getCycle(db, cycleId);
    throw new LedgerError('CYCLE_NOT_OPEN', `the cycle is ${current.state}; its record is final`, { cycleId, state: current.state });
  }
  return getCycle(db, cycleId);
}

export async function unsettledOwners(db: Database, limit = 1000): Promise<string[]> {
  positiveInt(limit, 'limit', 100_000);
  const { rows } = await db.query(
    `SELECT DISTINCT publisher_owner FROM earnings
      WHERE cycle_id IS NULL AND reversed_at IS NULL AND (hold_until IS NULL OR hold_until <= now()) AND ${CHANNEL_WITHDRAWN} LIMIT $1`,
    [limit],
  );
  return rows.map((r) => str(r.publisher_owner)).sort();
}

export async function lockClaimable(tx: Queryable, id: string, cycleId: string, lock: 'FOR SHARE' | 'FOR NO KEY UPDATE' = 'FOR SHARE'): Promise<string> {
  const { rows } = await tx.query(`SELECT publisher_owner, state FROM settlement_cycles WHERE id = $1 ${lock}`, [id]);
  const row = rows[0];
  if (!row) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
  if (!CLAIMABLE.includes(row.state as CycleState)) {
    throw new LedgerError('CYCLE_NOT_OPEN', `the cycle is ${String(row.state)}; earnings can no longer be added`, { cycleId, state: row.state });
  }
  return str(row.publisher_owner);
}

export function cycleIdParam(cycleId: string): string {
  if (!/^\d{1,18}$/.test(String(cycleId))) throw new LedgerError('CYCLE_NOT_FOUND', 'settlement cycle not found', { cycleId });
  return String(cycleId);
}
