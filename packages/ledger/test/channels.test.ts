import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitFee } from '@farebox/protocol';
import { Ledger, migrateLedger, type ChannelPayment, type ChannelVoucherInput, type PaymentChannelInput } from '@farebox/ledger';
import { accountId, migrationsAfter, openLedgerAt, openTestLedger, type TestLedger } from './helpers.js';

// MPP channel sessions (migration 0019): vouchers on one-way payment channels pay calls, one call in flight per
// channel; the treasury's withdrawals decide when their earnings are claimed into settlement cycles.

// The ledger's clock (LedgerOptions.now), moved by the tests: a lease ends without waiting for it.
let ahead = 0;
let t: TestLedger;
let clocked: Ledger;
beforeAll(async () => {
  t = await openTestLedger();
  clocked = new Ledger(t.ledger.db, { now: () => Date.now() + ahead });
});
afterAll(async () => {
  await t?.dispose();
});

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const strkey = (prefix: 'C' | 'G') => prefix + Array.from(randomBytes(55), (b) => BASE32[b % 32]).join('');
const hash = () => randomBytes(32).toString('hex');
const TREASURY = strkey('G');
const TOKEN = strkey('C');

function chainState(over: Partial<PaymentChannelInput> = {}): PaymentChannelInput {
  return {
    channel: strkey('C'),
    network: 'stellar:testnet',
    token: TOKEN,
    funder: strkey('G'),
    recipient: TREASURY,
    commitmentKey: randomBytes(32).toString('hex'),
    refundWaitingPeriod: 17_280,
    deposited: 100_000_000n,
    closeEffectiveLedger: null,
    ...over,
  };
}

let calls = 0;
function voucher(amount: bigint, price: bigint, owner: string, over: Partial<ChannelVoucherInput> = {}): ChannelVoucherInput {
  calls += 1;
  return { callId: `call_${calls}`, amount, price, signature: `sig_${amount}_${calls}`, service: 'weather', publisherOwner: owner, ...over };
}

/** Reserves and posts one call; returns its payment. */
async function pay(ledger: Ledger, channel: string, amount: bigint, price: bigint, owner: string) {
  const v = voucher(amount, price, owner);
  const r = await ledger.channels.reserve(channel, v);
  expect(r).toMatchObject({ reserved: true });
  const posted = await ledger.channels.post(channel, v.callId);
  if (!posted.applied) throw new Error('not posted');
  return posted.payment;
}

describe('a payment channel', () => {
  it('pays calls of different prices exactly: paid is their sum, each earning gross, fee and net exact', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const state = chainState();
    expect(await ledger.channels.upsert(state)).toMatchObject({ created: true, channel: { state: 'open', paid: 0n, withdrawn: 0n, paidSignature: null } });
    const prices = [1_000_021n, 2_500_000n, 333n];
    let cumulative = 0n;
    const payments: ChannelPayment[] = [];
    for (const price of prices) {
      cumulative += price;
      payments.push(await pay(ledger, state.channel, cumulative, price, owner));
    }
    const channel = await ledger.channels.get(state.channel);
    expect(channel).toMatchObject({ paid: 3_500_354n, paidSignature: payments[2]!.signature, pending: null, withdrawn: 0n });
    expect(payments.map((p) => [p.amount, p.price])).toEqual([
      [1_000_021n, 1_000_021n],
      [3_500_021n, 2_500_000n],
      [3_500_354n, 333n],
    ]);
    const { rows } = await ledger.db.query(
      'SELECT e.gross, e.fee, e.net, e.hold_id, e.exact_tx_hash, e.payer_account_id, e.channel_payment_id FROM earnings e WHERE publisher_owner = $1 ORDER BY e.id',
      [owner],
    );
    expect(rows).toEqual(
      prices.map((price, i) => ({
        gross: price.toString(),
        fee: splitFee(price).fee.toString(),
        net: splitFee(price).net.toString(),
        hold_id: null,
        exact_tx_hash: null,
        payer_account_id: null,
        channel_payment_id: payments[i]!.id,
      })),
    );
    // 1_000_021 -> fee 50_001; 2_500_000 -> 125_000; 333 -> 16.
    expect(rows.map((r) => r.fee)).toEqual(['50001', '125000', '16']);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 3, gross: 3_500_354n, fee: 175_017n });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('refuses each wrong voucher with a typed refusal carrying the paid amount, and writes nothing', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const state = chainState({ deposited: 1_000n });
    await ledger.channels.upsert(state);
    await pay(ledger, state.channel, 100n, 100n, owner);
    const reserve = (amount: bigint, price: bigint, over: Partial<ChannelVoucherInput> = {}) =>
      ledger.channels.reserve(state.channel, voucher(amount, price, owner, over));
    expect(await ledger.channels.reserve(strkey('C'), voucher(10n, 10n, owner))).toEqual({ reserved: false, refused: 'unknown', paid: 0n, channel: null });
    expect(await reserve(100n, 100n)).toMatchObject({ reserved: false, refused: 'replayed', paid: 100n });
    expect(await reserve(50n, 10n)).toMatchObject({ reserved: false, refused: 'lowered', paid: 100n });
    expect(await reserve(1_001n, 901n)).toMatchObject({ reserved: false, refused: 'over_deposit', paid: 100n });
    expect(await reserve(160n, 50n)).toMatchObject({ reserved: false, refused: 'wrong_amount', paid: 100n });
    const first = voucher(150n, 50n, owner);
    expect(await ledger.channels.reserve(state.channel, first)).toMatchObject({ reserved: true, voided: null });
    expect(await reserve(150n, 50n)).toMatchObject({ reserved: false, refused: 'busy', paid: 100n, channel: { pending: { callId: first.callId } } });
    await ledger.channels.void(state.channel, first.callId);
    // close_start seen on chain: no new vouchers.
    await ledger.channels.upsert({ ...state, state: 'closing', closeEffectiveLedger: 123_456 });
    expect(await reserve(150n, 50n)).toMatchObject({
      reserved: false,
      refused: 'closed',
      paid: 100n,
      channel: { state: 'closing', closeEffectiveLedger: 123_456 },
    });
    expect(await ledger.channels.get(state.channel)).toMatchObject({ paid: 100n, pending: null });
    const { rows } = await ledger.db.query('SELECT count(*)::int AS n FROM channel_payments WHERE channel = $1', [state.channel]);
    expect(rows[0]).toEqual({ n: 1 });
  });

  it('has one call in flight: of two concurrent reservations exactly one wins', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const state = chainState();
    await ledger.channels.upsert(state);
    const [a, b] = [voucher(10n, 10n, owner), voucher(10n, 10n, owner)];
    const results = await Promise.all([ledger.channels.reserve(state.channel, a), ledger.channels.reserve(state.channel, b)]);
    expect(results.filter((r) => r.reserved)).toHaveLength(1);
    expect(results.filter((r) => !r.reserved)).toEqual([expect.objectContaining({ refused: 'busy', paid: 0n })]);
    const winner = results[0]!.reserved ? a : b;
    const loser = winner === a ? b : a;
    // Eight more at once, while the winner's voucher is pending: all busy.
    const more = await Promise.all(Array.from({ length: 8 }, () => ledger.channels.reserve(state.channel, voucher(10n, 10n, owner))));
    expect(more.map((r) => (r.reserved ? 'reserved' : r.refused))).toEqual(Array(8).fill('busy'));
    expect(await ledger.channels.post(state.channel, loser.callId)).toMatchObject({ applied: false });
    expect(await ledger.channels.post(state.channel, winner.callId)).toMatchObject({ applied: true, channel: { paid: 10n } });
    // A second post of the same call changes nothing.
    expect(await ledger.channels.post(state.channel, winner.callId)).toMatchObject({ applied: false, channel: { paid: 10n } });
  });

  it('voids a pending voucher whose lease ended at the next reservation; the late post of that call changes nothing', async () => {
    const ledger = clocked;
    const owner = accountId('owner');
    const state = chainState();
    await ledger.channels.upsert(state);
    const stale = voucher(40n, 40n, owner, { leaseMs: 5_000 });
    expect(await ledger.channels.reserve(state.channel, stale)).toMatchObject({ reserved: true });
    const next = voucher(25n, 25n, owner);
    // The lease runs: busy.
    expect(await ledger.channels.reserve(state.channel, next)).toMatchObject({ reserved: false, refused: 'busy' });
    ahead += 6_000;
    expect(await ledger.channels.reserve(state.channel, next)).toMatchObject({
      reserved: true,
      voided: stale.callId,
      channel: { pending: { callId: next.callId, amount: 25n } },
    });
    // The late post (and void) of the voided call: nothing changes, the other call keeps the channel.
    expect(await ledger.channels.post(state.channel, stale.callId)).toMatchObject({ applied: false, channel: { paid: 0n, pending: { callId: next.callId } } });
    expect(await ledger.channels.void(state.channel, stale.callId)).toMatchObject({ applied: false, channel: { pending: { callId: next.callId } } });
    expect(await ledger.channels.post(state.channel, next.callId)).toMatchObject({ applied: true, channel: { paid: 25n, pending: null } });
    const { rows } = await ledger.db.query('SELECT call_id, amount FROM channel_payments WHERE channel = $1', [state.channel]);
    expect(rows).toEqual([{ call_id: next.callId, amount: '25' }]);
  });

  it('leaves paid unchanged on a void, so the same voucher amount pays the next call', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const state = chainState();
    await ledger.channels.upsert(state);
    await pay(ledger, state.channel, 30n, 30n, owner);
    const failed = voucher(50n, 20n, owner);
    await ledger.channels.reserve(state.channel, failed);
    expect(await ledger.channels.void(state.channel, failed.callId)).toMatchObject({ applied: true, channel: { paid: 30n, pending: null } });
    // A retried void, then a post of the voided call: nothing.
    expect(await ledger.channels.void(state.channel, failed.callId)).toMatchObject({ applied: false });
    expect(await ledger.channels.post(state.channel, failed.callId)).toMatchObject({ applied: false, channel: { paid: 30n } });
    const again = await pay(ledger, state.channel, 50n, 20n, owner);
    expect(again).toMatchObject({ amount: 50n, price: 20n });
    expect(await ledger.channels.get(state.channel)).toMatchObject({ paid: 50n, paidSignature: again.signature });
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 2, gross: 50n });
  });

  it('keeps its terms, lets the deposit only grow and the state only move forward', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const state = chainState({ deposited: 100n });
    await ledger.channels.upsert(state);
    expect(await ledger.channels.upsert({ ...state, deposited: 300n })).toMatchObject({ created: false, channel: { deposited: 300n } });
    expect(await ledger.channels.upsert({ ...state, deposited: 50n })).toMatchObject({ channel: { deposited: 300n } });
    await expect(ledger.channels.upsert({ ...state, funder: strkey('G') })).rejects.toThrow(`channel ${state.channel} is recorded with another funder`);
    await expect(ledger.channels.upsert({ ...state, commitmentKey: 'xyz' })).rejects.toThrow('commitmentKey must be 64 hex characters');
    await expect(ledger.channels.upsert({ ...state, channel: 'GABC' })).rejects.toThrow('channel must be a Stellar contract address (C...)');
    await pay(ledger, state.channel, 200n, 200n, owner);
    // A pending call, then the chain says the channel was refunded: it closes and the pending voucher is voided.
    const pending = voucher(250n, 50n, owner);
    await ledger.channels.reserve(state.channel, pending);
    await ledger.channels.upsert({ ...state, state: 'closed' });
    expect(await ledger.channels.upsert({ ...state, state: 'open' })).toMatchObject({ channel: { state: 'closed', pending: null, paid: 200n } });
    expect(await ledger.channels.post(state.channel, pending.callId)).toMatchObject({ applied: false });
    // The database refuses what the ledger never does.
    await expect(ledger.db.query('UPDATE payment_channels SET paid = 1 WHERE channel = $1', [state.channel])).rejects.toThrow(
      /payment_channels: a channel's terms/,
    );
    await expect(ledger.db.query('UPDATE payment_channels SET state = $2 WHERE channel = $1', [state.channel, 'open'])).rejects.toThrow(/payment_channels/);
    await expect(ledger.db.query('DELETE FROM payment_channels WHERE channel = $1', [state.channel])).rejects.toThrow('payment_channels are kept');
    await expect(ledger.db.query('DELETE FROM channel_payments WHERE channel = $1', [state.channel])).rejects.toThrow('channel_payments is append-only');
    await expect(ledger.db.query('UPDATE earnings SET channel_payment_id = NULL WHERE publisher_owner = $1', [owner])).rejects.toThrow(
      'earnings: only an unset cycle or funding batch may be assigned',
    );
  });
});

describe('withdrawals and the claim of channel earnings', () => {
  it('records each settle once, refuses above paid, and the claim waits for the withdrawal to cover each voucher', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const state = chainState();
    await ledger.channels.upsert(state);
    await pay(ledger, state.channel, 1_000n, 1_000n, owner);
    await pay(ledger, state.channel, 3_000n, 2_000n, owner);
    await pay(ledger, state.channel, 3_500n, 500n, owner);
    expect(await ledger.channels.due({ limit: 100_000 })).toContainEqual(
      expect.objectContaining({ channel: state.channel, paid: 3_500n, withdrawn: 0n, state: 'open', paidSignature: expect.stringMatching(/^sig_3500_/) }),
    );
    // Nothing withdrawn: nothing to claim, and the owner is not among those a settler picks up.
    expect(await ledger.unsettledOwners(100_000)).not.toContain(owner);
    const cycle = await ledger.openCycle(owner);
    expect(await ledger.claimEarnings(cycle.id)).toMatchObject({ claimed: 0, gross: 0n });
    // The database refuses the claim of an earning not withdrawn, whatever statement tries.
    await expect(ledger.db.query('UPDATE earnings SET cycle_id = $2 WHERE publisher_owner = $1', [owner, cycle.id])).rejects.toThrow(
      /claimed by no cycle before the treasury withdrew/,
    );

    // Above paid: refused, nothing written.
    const above = { txHash: hash(), channel: state.channel, amount: 3_501n, kind: 'settle' as const };
    expect(await ledger.channels.recordWithdrawal(above)).toMatchObject({ recorded: false, refused: 'above_paid', channel: { withdrawn: 0n } });
    expect(await ledger.channels.recordWithdrawal({ ...above, channel: strkey('C'), amount: 1n })).toEqual({
      recorded: false,
      refused: 'unknown',
      channel: null,
    });

    // A settle of the second voucher: the first two earnings are in the treasury.
    const settle = { txHash: hash(), channel: state.channel, amount: 3_000n, kind: 'settle' as const };
    const first = await ledger.channels.recordWithdrawal(settle);
    expect(first).toMatchObject({
      recorded: true,
      withdrawal: { txHash: settle.txHash, amount: 3_000n, kind: 'settle' },
      channel: { withdrawn: 3_000n, state: 'open' },
    });
    // The same transaction again (upper-case hash, another amount): nothing new.
    const again = await ledger.channels.recordWithdrawal({ ...settle, txHash: settle.txHash.toUpperCase(), amount: 1_000n });
    expect(again).toMatchObject({ recorded: false, withdrawal: { txHash: settle.txHash, amount: 3_000n }, channel: { withdrawn: 3_000n } });
    // Concurrent records of one transaction: one records it.
    const twice = { txHash: hash(), channel: state.channel, amount: 3_000n, kind: 'settle' as const };
    const both = await Promise.all([ledger.channels.recordWithdrawal(twice), ledger.channels.recordWithdrawal(twice)]);
    expect(both.map((r) => r.recorded).sort()).toEqual([false, true]);
    const { rows } = await ledger.db.query('SELECT count(*)::int AS n FROM channel_withdrawals WHERE channel = $1 AND tx_hash = $2', [
      state.channel,
      settle.txHash,
    ]);
    expect(rows[0]).toEqual({ n: 1 });
    // An older settle seen late never lowers withdrawn.
    await ledger.channels.recordWithdrawal({ txHash: hash(), channel: state.channel, amount: 1_000n, kind: 'settle' });
    expect(await ledger.channels.get(state.channel)).toMatchObject({ withdrawn: 3_000n });

    expect(await ledger.unsettledOwners(100_000)).toContain(owner);
    expect(await ledger.claimEarnings(cycle.id)).toMatchObject({ claimed: 2, gross: 3_000n, fee: 150n });
    expect(await ledger.claimEarnings(cycle.id)).toMatchObject({ claimed: 0 });
    expect((await ledger.channels.due({ limit: 100_000 })).find((d) => d.channel === state.channel)).toMatchObject({ paid: 3_500n, withdrawn: 3_000n });

    // The treasury closes with the last voucher: the channel is closed, the last earning claimed.
    const close = await ledger.channels.recordWithdrawal({ txHash: hash(), channel: state.channel, amount: 3_500n, kind: 'close' });
    expect(close).toMatchObject({ recorded: true, channel: { withdrawn: 3_500n, state: 'closed' } });
    expect((await ledger.channels.due({ limit: 100_000 })).map((d) => d.channel)).not.toContain(state.channel);
    expect(await ledger.claimEarnings(cycle.id, { batch: true })).toMatchObject({ claimed: 1, gross: 500n, batch: { amount: 500n } });
    expect(await ledger.getCycle(cycle.id)).toMatchObject({ calls: 3, gross: 3_500n, fee: 175n, net: 3_325n });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('lists closing channels as due, with the ledger their close takes effect at', async () => {
    const { ledger } = t;
    const state = chainState();
    await ledger.channels.upsert(state);
    expect((await ledger.channels.due({ limit: 100_000 })).map((d) => d.channel)).not.toContain(state.channel);
    await ledger.channels.upsert({ ...state, state: 'closing', closeEffectiveLedger: 999 });
    expect((await ledger.channels.due({ limit: 100_000 })).find((d) => d.channel === state.channel)).toEqual({
      channel: state.channel,
      network: 'stellar:testnet',
      state: 'closing',
      paid: 0n,
      paidSignature: null,
      withdrawn: 0n,
      closeEffectiveLedger: 999,
      paidAt: null,
    });
  });
});

describe('verify()', () => {
  it('is clean after all of the above', async () => {
    expect((await t.ledger.verify()).mismatches).toEqual([]);
  });

  it('names a channel payment without its earning, and a channel whose payments do not add up to its paid', async () => {
    const own = await openTestLedger();
    try {
      const { ledger } = own;
      const owner = accountId('owner');
      const state = chainState();
      await ledger.channels.upsert(state);
      await pay(ledger, state.channel, 10n, 10n, owner);
      expect((await ledger.verify()).mismatches).toEqual([]);
      // A payment written around the ledger: no earning, and the channel's paid did not move.
      const { rows } = await ledger.db.query(
        `INSERT INTO channel_payments (channel, call_id, amount, price, signature, service, publisher_owner)
         VALUES ($1, 'planted', 17, 7, 'sig', 'weather', $2) RETURNING id`,
        [state.channel, owner],
      );
      const planted = String(rows[0]!.id);
      const report = await ledger.verify();
      expect(report.ok).toBe(false);
      expect(report.mismatches).toEqual([
        { kind: 'channel-payment', id: planted, expected: `one earning of 7 for weather of ${owner}`, actual: 'no earning' },
        {
          kind: 'channel',
          id: state.channel,
          expected: "paid 10: the sum of its payments and the last voucher's amount",
          actual: '2 payments adding up to 17, last voucher 17',
        },
      ]);
    } finally {
      await own.dispose();
    }
  });
});

it('arrives with an upgrade from schema 18 that keeps the earnings recorded', async () => {
  const { db, dispose } = await openLedgerAt(18);
  try {
    await db.query(
      `INSERT INTO exact_payments (tx_hash, network, asset, payer, pay_to, service, publisher_owner, amount, fee_charged)
       VALUES ($1, 'stellar:testnet', 'C', 'GP', 'GT', 'weather', 'GO', 7, 0)`,
      [hash()],
    );
    await db.query(
      `INSERT INTO earnings (exact_tx_hash, publisher_owner, service, gross, fee, net) SELECT tx_hash, 'GO', 'weather', 7, 0, 7 FROM exact_payments`,
    );
    expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(18));
    const { rows } = await db.query('SELECT gross, channel_payment_id FROM earnings');
    expect(rows).toEqual([{ gross: '7', channel_payment_id: null }]);
  } finally {
    await dispose();
  }
});
