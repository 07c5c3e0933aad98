import { MAX_BASE_UNITS, splitFee } from '@farebox/protocol';
import type { Database } from './db.js';
import { big, date, dateOrNull, invalid, positiveAmount, positiveInt, str, strOrNull, text, type Row } from './rows.js';
import {
  DEFAULT_HOLD_TIMEOUT_MS,
  type ChannelDue,
  type ChannelPostResult,
  type ChannelRefusal,
  type ChannelReserveResult,
  type ChannelState,
  type ChannelVoucherInput,
  type ChannelWithdrawal,
  type ChannelWithdrawalInput,
  type ChannelWithdrawalResult,
  type PaymentChannel,
  type PaymentChannelInput,
  type VerifyMismatch,
} from './types.js';

// MPP channel sessions (migration 0019): one-way payment channels on Stellar whose vouchers (a signature over a
// cumulative amount) pay gateway calls. One call in flight per channel: its voucher is reserved on the channel's row
// before the service runs, then posted (paid moves to it, its payment and earning are written) or voided, each in one
// statement. The treasury's settle and close transactions are recorded as withdrawals; only the earnings of vouchers
// withdrawn into the treasury are claimed into settlement cycles (settlement.ts).

const CONTRACT = /^C[A-Z2-7]{55}$/;
const ADDRESS = /^[GC][A-Z2-7]{55}$/;
const STATES: readonly ChannelState[] = ['open', 'closing', 'closed'];
const U32 = 4_294_967_295;
/** The longest lease a reservation may take (1 hour). */
const MAX_LEASE_MS = 3_600_000;

function address(value: unknown, name: string, pattern: RegExp): string {
  const s = text(value, name, 56);
  if (!pattern.test(s)) invalid(`${name} must be a Stellar ${pattern === CONTRACT ? 'contract address (C...)' : 'address (G... or C...)'}`, { field: name });
  return s;
}

function ledgerNumber(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > U32)
    invalid(`${name} must be an integer from 0 to ${U32}`, { field: name, value });
  return value;
}

function baseUnits(value: unknown, name: string): bigint {
  if (typeof value !== 'bigint' || value < 0n || value > MAX_BASE_UNITS)
    invalid(`${name} must be a bigint from 0 to ${MAX_BASE_UNITS} base units`, { field: name });
  return value;
}

function txHashOf(value: unknown): string {
  const s = text(value, 'txHash', 128).toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(s)) invalid('txHash must be 64 hex characters', { field: 'txHash' });
  return s;
}

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export function toChannel(r: Row): PaymentChannel {
  return {
    channel: str(r.channel),
    network: str(r.network),
    token: str(r.token),
    funder: str(r.funder),
    recipient: str(r.recipient),
    commitmentKey: str(r.commitment_key),
    refundWaitingPeriod: Number(r.refund_waiting_period),
    deposited: big(r.deposited),
    closeEffectiveLedger: numOrNull(r.close_effective_ledger),
    state: r.state as ChannelState,
    paid: big(r.paid),
    paidSignature: strOrNull(r.paid_signature),
    paidAt: dateOrNull(r.paid_at),
    withdrawn: big(r.withdrawn),
    pending:
      r.pending_call_id === null || r.pending_call_id === undefined
        ? null
        : {
            callId: str(r.pending_call_id),
            amount: big(r.pending_amount),
            price: big(r.pending_price),
            signature: str(r.pending_signature),
            service: str(r.pending_service),
            publisherOwner: str(r.pending_publisher_owner),
            until: date(r.pending_until),
          },
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

/** The pending voucher's columns, cleared (a void, a close). */
const CLEAR_PENDING = `pending_call_id = NULL, pending_amount = NULL, pending_price = NULL, pending_fee = NULL, pending_signature = NULL,
  pending_service = NULL, pending_publisher_owner = NULL, pending_until = NULL`;
const PENDING_COLUMNS = [
  'pending_call_id',
  'pending_amount',
  'pending_price',
  'pending_fee',
  'pending_signature',
  'pending_service',
  'pending_publisher_owner',
  'pending_until',
];
/** Keeps the pending voucher unless `closed` says the channel closes (a closed channel has none). */
const pendingUnless = (closed: string, alias: string) => PENDING_COLUMNS.map((c) => `${c} = CASE WHEN ${closed} THEN NULL ELSE ${alias}.${c} END`).join(', ');

/**
 * Records a channel's state as read from chain: a new channel is inserted `open` (or as `state` says); a known one
 * keeps its terms (network, token, funder, recipient, commitment key, refund waiting period: another value gives
 * `INVALID_INPUT` and changes nothing), its deposit only grows, its state only moves forward, and a channel that
 * closes loses its pending voucher (that call is not paid).
 */
export async function upsertChannel(db: Database, input: PaymentChannelInput): Promise<{ created: boolean; channel: PaymentChannel }> {
  const channel = address(input?.channel, 'channel', CONTRACT);
  const network = text(input.network, 'network', 64);
  const token = address(input.token, 'token', CONTRACT);
  const funder = address(input.funder, 'funder', ADDRESS);
  const recipient = address(input.recipient, 'recipient', ADDRESS);
  const key = text(input.commitmentKey, 'commitmentKey', 64).toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(key)) invalid('commitmentKey must be 64 hex characters', { field: 'commitmentKey' });
  const waiting = ledgerNumber(input.refundWaitingPeriod, 'refundWaitingPeriod');
  const deposited = baseUnits(input.deposited, 'deposited');
  const closeAt =
    input.closeEffectiveLedger === undefined || input.closeEffectiveLedger === null ? null : ledgerNumber(input.closeEffectiveLedger, 'closeEffectiveLedger');
  const state = input.state ?? 'open';
  if (!STATES.includes(state)) invalid(`state must be one of ${STATES.join(', ')}`, { field: 'state' });
  const { rows } = await db.query(
    `INSERT INTO payment_channels AS c (channel, network, token, funder, recipient, commitment_key, refund_waiting_period, deposited, close_effective_ledger, state)
     VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8::bigint, $9::bigint, $10)
     ON CONFLICT (channel) DO UPDATE SET
       deposited = GREATEST(c.deposited, EXCLUDED.deposited),
       close_effective_ledger = COALESCE(EXCLUDED.close_effective_ledger, c.close_effective_ledger),
       state = CASE WHEN 'closed' IN (c.state, EXCLUDED.state) THEN 'closed' WHEN 'closing' IN (c.state, EXCLUDED.state) THEN 'closing' ELSE 'open' END,
       ${pendingUnless(`'closed' IN (c.state, EXCLUDED.state)`, 'c')},
       updated_at = now()
     WHERE c.network = EXCLUDED.network AND c.token = EXCLUDED.token AND c.funder = EXCLUDED.funder AND c.recipient = EXCLUDED.recipient
       AND c.commitment_key = EXCLUDED.commitment_key AND c.refund_waiting_period = EXCLUDED.refund_waiting_period
     RETURNING c.*, (c.xmax = 0) AS created`,
    [channel, network, token, funder, recipient, key, waiting, deposited.toString(), closeAt, state],
  );
  if (rows[0]) return { created: rows[0].created === true, channel: toChannel(rows[0]) };
  const known = await getChannel(db, channel);
  if (!known) invalid('channel not recorded', { channel });
  const differ = (
    [
      ['network', known.network, network],
      ['token', known.token, token],
      ['funder', known.funder, funder],
      ['recipient', known.recipient, recipient],
      ['commitmentKey', known.commitmentKey, key],
      ['refundWaitingPeriod', known.refundWaitingPeriod, waiting],
    ] as const
  )
    .filter(([, a, b]) => a !== b)
    .map(([f]) => f);
  invalid(`channel ${channel} is recorded with another ${differ.join(', ')}`, { channel, fields: differ });
}

/** The channel, or null when none is recorded. */
export async function getChannel(db: Database, channel: string): Promise<PaymentChannel | null> {
  const { rows } = await db.query('SELECT * FROM payment_channels WHERE channel = $1', [text(channel, 'channel', 56)]);
  return rows[0] ? toChannel(rows[0]) : null;
}

/**
 * Reserves the channel for one call with its voucher, before the service is called, in one statement: only if the
 * channel is `open`, the voucher's amount is exactly the channel's paid plus `price`, within the deposit, and no
 * other call's voucher is pending on it (one whose lease ended is voided by this statement: `voided` names its
 * call). The same call reserving again (a retry) renews its reservation. Otherwise a typed refusal, nothing written,
 * with the channel's paid. `lead`: how far the ledger's clock runs ahead of the machine's (clock.ts).
 */
export async function reserveVoucher(db: Database, channel: string, input: ChannelVoucherInput, lead = 0): Promise<ChannelReserveResult> {
  const id = text(channel, 'channel', 56);
  const callId = text(input?.callId, 'callId');
  const amount = positiveAmount(input.amount, 'amount');
  const price = positiveAmount(input.price, 'price');
  const signature = text(input.signature, 'signature', 512);
  const service = text(input.service, 'service');
  const owner = text(input.publisherOwner, 'publisherOwner');
  const leaseMs = input.leaseMs === undefined ? DEFAULT_HOLD_TIMEOUT_MS : positiveInt(input.leaseMs, 'leaseMs', MAX_LEASE_MS);
  const { fee } = splitFee(price);
  for (let attempt = 0; ; attempt++) {
    // `seen` locks the row and reads the call pending now; the update takes the channel only from that same call (a
    // concurrent reservation that took it in between leaves this one nothing to update: it reads the refusal).
    const { rows } = await db.query(
      `WITH seen AS (SELECT channel, pending_call_id FROM payment_channels WHERE channel = $1 FOR UPDATE)
       UPDATE payment_channels c SET pending_call_id = $2, pending_amount = $3::bigint, pending_price = $4::bigint, pending_fee = $5::bigint,
              pending_signature = $6, pending_service = $7, pending_publisher_owner = $8,
              pending_until = now() + make_interval(secs => $9::float8 / 1000), updated_at = now()
         FROM seen
        WHERE c.channel = seen.channel AND c.pending_call_id IS NOT DISTINCT FROM seen.pending_call_id
          AND c.state = 'open' AND c.paid + $4::bigint = $3::bigint AND $3::bigint <= c.deposited
          AND (c.pending_call_id IS NULL OR c.pending_call_id = $2 OR c.pending_until <= now() + make_interval(secs => $10::float8 / 1000))
       RETURNING c.*, seen.pending_call_id AS prior`,
      [id, callId, amount.toString(), price.toString(), fee.toString(), signature, service, owner, leaseMs + lead, lead],
    );
    const taken = rows[0];
    if (taken) {
      const prior = strOrNull(taken.prior);
      return { reserved: true, channel: toChannel(taken), voided: prior !== null && prior !== callId ? prior : null };
    }
    const read = await db.query(
      'SELECT *, pending_until <= now() + make_interval(secs => $2::float8 / 1000) AS expired FROM payment_channels WHERE channel = $1',
      [id, lead],
    );
    const r = read.rows[0];
    const refused = refusal(r, amount, price, callId);
    // Nothing refuses it now: the channel moved between the two statements (a post, a void, a lease that ended).
    if (refused === null && attempt < 4) continue;
    return { reserved: false, refused: refused ?? 'busy', paid: r ? big(r.paid) : 0n, channel: r ? toChannel(r) : null };
  }
}

function refusal(r: Row | undefined, amount: bigint, price: bigint, callId: string): ChannelRefusal | null {
  if (!r) return 'unknown';
  if (r.state !== 'open') return 'closed';
  const paid = big(r.paid);
  if (amount === paid) return 'replayed';
  if (amount < paid) return 'lowered';
  if (amount > big(r.deposited)) return 'over_deposit';
  if (amount !== paid + price) return 'wrong_amount';
  if (r.pending_call_id !== null && r.pending_call_id !== callId && r.expired !== true) return 'busy';
  return null;
}

/**
 * Posts the call's pending voucher (the call succeeded), in one statement: the channel's paid becomes the voucher's
 * amount and its signature the paid one, the pending voucher is cleared, and the payment (`channel_payments`) and its
 * earning (gross = the call's price, fee and net as a posted call's) are written. Only the call whose voucher is
 * pending: any other call id (a late post after its lease ended and another call took the channel, a second post)
 * changes nothing (`applied: false`).
 */
export async function postVoucher(db: Database, channel: string, callId: string): Promise<ChannelPostResult> {
  const id = text(channel, 'channel', 56);
  const call = text(callId, 'callId');
  const { rows } = await db.query(
    `WITH seen AS (
       SELECT * FROM payment_channels WHERE channel = $1 AND pending_call_id = $2 FOR UPDATE
     ), moved AS (
       UPDATE payment_channels c SET paid = seen.pending_amount, paid_signature = seen.pending_signature, paid_at = now(), updated_at = now(),
              ${CLEAR_PENDING}
         FROM seen
        WHERE c.channel = seen.channel AND c.pending_call_id = seen.pending_call_id AND c.pending_until = seen.pending_until
          AND c.pending_amount = seen.pending_amount AND c.pending_signature = seen.pending_signature
       RETURNING c.*, seen.pending_call_id AS s_call_id, seen.pending_price AS s_price, seen.pending_fee AS s_fee,
                 seen.pending_service AS s_service, seen.pending_publisher_owner AS s_owner
     ), p AS (
       INSERT INTO channel_payments (channel, call_id, amount, price, signature, service, publisher_owner)
       SELECT channel, s_call_id, paid, s_price, paid_signature, s_service, s_owner FROM moved
       RETURNING *
     ), e AS (
       INSERT INTO earnings (channel_payment_id, publisher_owner, service, gross, fee, net)
       SELECT p.id, p.publisher_owner, p.service, p.price, m.s_fee, p.price - m.s_fee FROM p, moved m
       RETURNING id
     )
     SELECT m.*, p.id AS p_id, p.call_id AS p_call_id, p.amount AS p_amount, p.price AS p_price, p.signature AS p_signature,
            p.service AS p_service, p.publisher_owner AS p_owner, p.created_at AS p_created_at, e.id AS earning_id
       FROM moved m, p, e`,
    [id, call],
  );
  const r = rows[0];
  if (!r) return { applied: false, channel: await getChannel(db, id) };
  return {
    applied: true,
    channel: toChannel(r),
    payment: {
      id: str(r.p_id),
      channel: str(r.channel),
      callId: str(r.p_call_id),
      amount: big(r.p_amount),
      price: big(r.p_price),
      signature: str(r.p_signature),
      service: str(r.p_service),
      publisherOwner: str(r.p_owner),
      earningId: str(r.earning_id),
      createdAt: date(r.p_created_at),
    },
  };
}

/**
 * Voids the call's pending voucher (the call failed): the reservation is cleared and nothing else changes (the
 * channel's paid stays, so the same voucher amount pays the next call). Any other call id changes nothing
 * (`applied: false`).
 */
export async function voidVoucher(db: Database, channel: string, callId: string): Promise<{ applied: boolean; channel: PaymentChannel | null }> {
  const id = text(channel, 'channel', 56);
  const { rows } = await db.query(`UPDATE payment_channels SET ${CLEAR_PENDING}, updated_at = now() WHERE channel = $1 AND pending_call_id = $2 RETURNING *`, [
    id,
    text(callId, 'callId'),
  ]);
  if (rows[0]) return { applied: true, channel: toChannel(rows[0]) };
  return { applied: false, channel: await getChannel(db, id) };
}

function toWithdrawal(r: Row, prefix = ''): ChannelWithdrawal {
  return {
    txHash: str(r[`${prefix}tx_hash`]),
    channel: str(r[`${prefix}channel`]),
    amount: big(r[`${prefix}amount`]),
    kind: r[`${prefix}kind`] as ChannelWithdrawal['kind'],
    createdAt: date(r[`${prefix}created_at`]),
  };
}

/**
 * Records a treasury settle or close transaction on a channel, once per transaction, in one statement: the
 * withdrawal row and the channel's withdrawn raised to its amount (never lowered); a close also closes the channel
 * (and voids a pending voucher). A second record of the transaction writes nothing and returns the first
 * (`recorded: false`). Refused, nothing written: an unknown channel, or an amount above the channel's paid (the
 * treasury cannot have withdrawn vouchers the ledger never counted).
 */
export async function recordWithdrawal(db: Database, input: ChannelWithdrawalInput): Promise<ChannelWithdrawalResult> {
  const txHash = txHashOf(input?.txHash);
  const id = text(input.channel, 'channel', 56);
  const amount = baseUnits(input.amount, 'amount');
  const kind = input.kind;
  if (kind !== 'settle' && kind !== 'close') invalid('kind must be settle or close', { field: 'kind' });
  const { rows } = await db.query(
    `WITH w AS (
       INSERT INTO channel_withdrawals (tx_hash, channel, amount, kind)
       SELECT $1, channel, $3::bigint, $4 FROM payment_channels WHERE channel = $2 AND paid >= $3::bigint
       ON CONFLICT (tx_hash) DO NOTHING
       RETURNING *
     ), moved AS (
       UPDATE payment_channels c SET withdrawn = GREATEST(c.withdrawn, w.amount),
              state = CASE WHEN w.kind = 'close' THEN 'closed' ELSE c.state END,
              ${pendingUnless(`w.kind = 'close'`, 'c')},
              updated_at = now()
         FROM w WHERE c.channel = w.channel
       RETURNING c.*
     )
     SELECT m.*, w.tx_hash AS w_tx_hash, w.channel AS w_channel, w.amount AS w_amount, w.kind AS w_kind, w.created_at AS w_created_at FROM w, moved m`,
    [txHash, id, amount.toString(), kind],
  );
  if (rows[0]) return { recorded: true, withdrawal: toWithdrawal(rows[0], 'w_'), channel: toChannel(rows[0]) };
  const existing = await db.query('SELECT * FROM channel_withdrawals WHERE tx_hash = $1', [txHash]);
  if (existing.rows[0]) {
    const withdrawal = toWithdrawal(existing.rows[0]);
    const channel = await getChannel(db, withdrawal.channel);
    if (!channel) invalid('channel not recorded', { channel: withdrawal.channel });
    return { recorded: false, withdrawal, channel };
  }
  const channel = await getChannel(db, id);
  return { recorded: false, refused: channel ? 'above_paid' : 'unknown', channel };
}

/**
 * The channels the watcher acts on: paid vouchers the treasury has not all withdrawn (`paid > withdrawn`), or a
 * close started on chain (`closing`), in channel order after the `after` cursor.
 */
export async function dueChannels(db: Database, options: { after?: string; limit?: number } = {}): Promise<ChannelDue[]> {
  const limit = options.limit === undefined ? 1000 : positiveInt(options.limit, 'limit', 100_000);
  const after = options.after === undefined ? '' : text(options.after, 'after', 56);
  const { rows } = await db.query(
    `SELECT channel, network, state, paid, paid_signature, withdrawn, close_effective_ledger, paid_at FROM payment_channels
      WHERE (paid > withdrawn OR state = 'closing') AND channel > $1 ORDER BY channel LIMIT $2`,
    [after, limit],
  );
  return rows.map((r) => ({
    channel: str(r.channel),
    network: str(r.network),
    state: r.state as ChannelState,
    paid: big(r.paid),
    paidSignature: strOrNull(r.paid_signature),
    withdrawn: big(r.withdrawn),
    closeEffectiveLedger: numOrNull(r.close_effective_ledger),
    paidAt: dateOrNull(r.paid_at),
  }));
}

/**
 * The channel part of `verify()`: every channel payment has exactly its one earning (gross = its price, its service
 * and owner; `channel-payment`), each channel's payments add up to its paid and the last of them is its paid
 * (`channel`), and no channel's withdrawn passes its paid (`channel`).
 */
export async function verifyChannels(db: Database): Promise<VerifyMismatch[]> {
  const found: VerifyMismatch[] = [];
  const payments = await db.query(
    `SELECT p.id, p.price, p.service, p.publisher_owner, e.id AS earning_id, e.gross, e.service AS e_service, e.publisher_owner AS e_owner
       FROM channel_payments p LEFT JOIN earnings e ON e.channel_payment_id = p.id
      WHERE e.id IS NULL OR e.gross <> p.price OR e.service <> p.service OR e.publisher_owner <> p.publisher_owner`,
  );
  for (const r of payments.rows) {
    found.push({
      kind: 'channel-payment',
      id: str(r.id),
      expected: `one earning of ${str(r.price)} for ${str(r.service)} of ${str(r.publisher_owner)}`,
      actual: r.earning_id === null ? 'no earning' : `earning ${str(r.earning_id)}: ${str(r.gross)} for ${str(r.e_service)} of ${str(r.e_owner)}`,
    });
  }
  const channels = await db.query(
    `SELECT c.channel, c.paid, c.withdrawn, COALESCE(t.total, 0) AS total, COALESCE(t.last, 0) AS last, COALESCE(t.n, 0) AS n
       FROM payment_channels c LEFT JOIN (
         SELECT channel, sum(price) AS total, max(amount) AS last, count(*) AS n FROM channel_payments GROUP BY channel
       ) t ON t.channel = c.channel
      WHERE c.paid <> COALESCE(t.total, 0) OR c.paid <> COALESCE(t.last, 0) OR c.withdrawn > c.paid`,
  );
  for (const r of channels.rows) {
    const paid = big(r.paid);
    if (paid !== big(r.total) || paid !== big(r.last)) {
      found.push({
        kind: 'channel',
        id: str(r.channel),
        expected: `paid ${str(r.paid)}: the sum of its payments and the last voucher's amount`,
        actual: `${str(r.n)} payments adding up to ${str(r.total)}, last voucher ${str(r.last)}`,
      });
    }
    if (big(r.withdrawn) > paid) {
      found.push({ kind: 'channel', id: str(r.channel), expected: `withdrawn at most paid ${str(r.paid)}`, actual: `withdrawn ${str(r.withdrawn)}` });
    }
  }
  return found;
}

/**
 * `ledger.channels`: one-way payment channels whose vouchers (a signature over a cumulative amount) pay calls, one
 * call in flight per channel; leases on the ledger's clock (`lead`: its lead over the database's).
 * - `upsert`: the channel's state as read from chain (terms fixed, deposit only grows, state only forward).
 * - `reserve`: before the service runs, the call's voucher is reserved on the channel, in one statement, only if it
 *   is exactly paid + price, within the deposit, the channel `open` and no other call pending (an expired one is
 *   voided); else a typed refusal (`ChannelRefusal`) with the channel's paid.
 * - `post`: the pending voucher is paid (paid, its signature, a `channel_payments` row and its earning) in one
 *   statement; `void`: it is cleared, nothing else moves. Only the call pending now: another call id changes nothing.
 * - `recordWithdrawal`: a treasury settle / close transaction, once per transaction (raises withdrawn; a close
 *   closes the channel); refused above the channel's paid. Channel earnings are claimed once withdrawn covers them.
 * - `due`: what the watcher settles or watches close; `get`: one channel.
 */
export function channelsApi(db: Database, lead: () => number) {
  return {
    upsert: (input: PaymentChannelInput): Promise<{ created: boolean; channel: PaymentChannel }> => upsertChannel(db, input),
    get: (channel: string): Promise<PaymentChannel | null> => getChannel(db, channel),
    reserve: (channel: string, voucher: ChannelVoucherInput): Promise<ChannelReserveResult> => reserveVoucher(db, channel, voucher, lead()),
    post: (channel: string, callId: string): Promise<ChannelPostResult> => postVoucher(db, channel, callId),
    void: (channel: string, callId: string): Promise<{ applied: boolean; channel: PaymentChannel | null }> => voidVoucher(db, channel, callId),
    recordWithdrawal: (input: ChannelWithdrawalInput): Promise<ChannelWithdrawalResult> => recordWithdrawal(db, input),
    due: (options: { after?: string; limit?: number } = {}): Promise<ChannelDue[]> => dueChannels(db, options),
  };
}
export type ChannelsApi = ReturnType<typeof channelsApi>;
