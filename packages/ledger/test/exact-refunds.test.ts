import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitFee } from '@farebox/protocol';
import { exactRefunds, type ExactPaymentInput } from '@farebox/ledger';

const { complete: completeExactRefund, get: getExactRefund, note: noteExactRefund, open: openExactRefund } = exactRefunds;
import { accountId, openTestLedger, type TestLedger } from './helpers.js';

// Refunds of x402 `exact` payments (migration 0017): the refund's intent and the earning's reversal in one statement,
// once per payment, only for the owner of the payment's service and only before a settlement cycle claimed the
// earning; a reversed earning counts nowhere and is never claimed.

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

const hash = () => randomBytes(32).toString('hex');
const payment = (owner: string, amount: bigint): ExactPaymentInput => ({
  txHash: hash(),
  network: 'stellar:testnet',
  asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
  payer: `GPAYER${randomBytes(4).toString('hex')}`,
  payTo: 'GTREASURY',
  service: 'printer',
  publisherOwner: owner,
  amount,
  feeCharged: 10_123n,
});
const ask = (txHash: string, owner: string, over: { service?: string; windowMs?: number } = {}) => ({
  paymentTxHash: txHash,
  service: over.service ?? 'printer',
  requestedBy: owner,
  requestedAtMs: Date.now(),
  windowMs: over.windowMs ?? 600_000,
});

describe('the refund of an exact payment', () => {
  it('reverses the earning with the refund intent, once; refused for another service, another key, a second time; never claimed into a cycle', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const kept = payment(owner, 1_000_021n);
    const refunded = payment(owner, 2_000_000n);
    await ledger.recordExactPayment(kept);
    await ledger.recordExactPayment(refunded);
    const db = ledger.db;
    expect(await openExactRefund(db, ask(hash(), owner))).toEqual({ opened: false, refused: 'unknown_payment', refund: null });
    expect(await openExactRefund(db, ask(refunded.txHash, owner, { service: 'other' }))).toEqual({ opened: false, refused: 'other_service', refund: null });
    expect(await openExactRefund(db, ask(refunded.txHash, accountId('thief')))).toEqual({ opened: false, refused: 'not_owner', refund: null });
    const first = await openExactRefund(db, ask(refunded.txHash, owner));
    expect(first).toMatchObject({ opened: true, refund: { paymentTxHash: refunded.txHash, payer: refunded.payer, amount: 2_000_000n, state: 'pending' } });
    const second = await openExactRefund(db, ask(refunded.txHash, owner));
    expect(second).toMatchObject({ opened: false, refused: 'exists', refund: { paymentTxHash: refunded.txHash, state: 'pending' } });
    // The owner's figures count the kept payment only.
    const split = splitFee(1_000_021n);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: 1_000_021n, fee: split.fee, pending: split.net });
    // The refund transaction is recorded before submission, then the refund closes with it, once.
    const tx = hash();
    expect(await noteExactRefund(db, refunded.txHash, { hash: tx, xdr: 'AAAA' })).toEqual({ noted: true });
    expect(await completeExactRefund(db, refunded.txHash, tx)).toMatchObject({ completed: true, refund: { state: 'refunded', refundTxHash: tx } });
    expect(await completeExactRefund(db, refunded.txHash, hash())).toMatchObject({ completed: false, refund: { refundTxHash: tx } });
    // A reversal is final and the database refuses a reversed earning in a cycle.
    await expect(db.query('UPDATE earnings SET reversed_at = NULL WHERE exact_tx_hash = $1', [refunded.txHash])).rejects.toThrow(/only an unset cycle/);
    await expect(db.query('DELETE FROM exact_refunds')).rejects.toThrow(/DELETE refused/);
    // The cycle claims the kept payment only: its fee is the kept payment's, the refunded one has none.
    const cycle = await ledger.openCycle(owner);
    const claimed = await ledger.claimEarnings(cycle.id, { batch: true });
    expect(claimed).toMatchObject({ claimed: 1, gross: 1_000_021n, fee: split.fee });
    expect(await ledger.claimEarnings(cycle.id, { batch: true })).toMatchObject({ claimed: 0 });
    expect(await ledger.unsettledOwners()).not.toContain(owner);
    // Claimed: too late for a refund of the kept payment.
    expect(await openExactRefund(db, ask(kept.txHash, owner))).toEqual({ opened: false, refused: 'paid_out', refund: null });
    expect((await getExactRefund(db, kept.txHash)) ?? null).toBeNull();
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('is refused once the window after the settlement closed', async () => {
    const { ledger } = t;
    const owner = accountId('late');
    const p = payment(owner, 100n);
    await ledger.recordExactPayment(p);
    await ledger.db.query('ALTER TABLE exact_payments DISABLE TRIGGER exact_payments_append_only');
    await ledger.db.query(`UPDATE exact_payments SET created_at = now() - interval '11 minutes' WHERE tx_hash = $1`, [p.txHash]);
    await ledger.db.query('ALTER TABLE exact_payments ENABLE TRIGGER exact_payments_append_only');
    expect(await openExactRefund(ledger.db, ask(p.txHash, owner))).toEqual({ opened: false, refused: 'window_closed', refund: null });
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: 100n });
  });
});

// Schema 18: the earning of a settle-first payment is held back from batches for its refund window, so a refund within
// the window always finds it unclaimed; after the window the next claim takes it; other payments keep their timing.
describe('the hold of a settle-first payment’s earning', () => {
  it('no claim takes it within the hold (the database refuses any other statement too); a refund then reverses it; after the hold a claim takes it', async () => {
    const { ledger } = t;
    const db = ledger.db;
    const owner = accountId('held');
    const plain = payment(owner, 1_000_021n);
    const held = payment(owner, 2_000_000n);
    const refunded = payment(owner, 3_000_000n);
    await ledger.recordExactPayment(plain);
    const recorded = await ledger.recordExactPayment({ ...held, holdMs: 600_000 });
    await ledger.recordExactPayment({ ...refunded, holdMs: 600_000 });
    const holdUntil = recorded.payment.holdUntil!;
    expect(holdUntil.getTime() - recorded.payment.createdAt.getTime()).toBe(600_000);
    expect((await ledger.exactPayment(plain.txHash))!.holdUntil).toBeNull();
    // A funding tick now claims the payment without a hold only.
    const cycle = await ledger.openCycle(owner);
    expect(await ledger.claimEarnings(cycle.id, { batch: true })).toMatchObject({ claimed: 1, gross: 1_000_021n });
    expect(await ledger.unsettledOwners()).not.toContain(owner);
    // Nothing else may put it in a cycle or move its hold.
    await expect(db.query('UPDATE earnings SET cycle_id = $2 WHERE exact_tx_hash = $1', [held.txHash, cycle.id])).rejects.toThrow(/claimed by no cycle before/);
    await expect(db.query('UPDATE earnings SET hold_until = now() WHERE exact_tx_hash = $1', [held.txHash])).rejects.toThrow(/hold is fixed/);
    // Within the window the refund finds it unclaimed.
    expect(await openExactRefund(db, ask(refunded.txHash, owner))).toMatchObject({ opened: true, refund: { amount: 3_000_000n } });
    // The hold ends (moved back here; the guards are off for that one statement): the next claim takes the held payment only.
    await db.query('ALTER TABLE earnings DISABLE TRIGGER earnings_hold_guard');
    await db.query(`UPDATE earnings SET hold_until = now() - interval '1 second' WHERE exact_tx_hash = ANY($1::text[])`, [[held.txHash, refunded.txHash]]);
    await db.query('ALTER TABLE earnings ENABLE TRIGGER earnings_hold_guard');
    expect(await ledger.unsettledOwners()).toContain(owner);
    const split = splitFee(3_000_021n);
    expect(await ledger.claimEarnings(cycle.id, { batch: true })).toMatchObject({ claimed: 1, gross: 2_000_000n });
    expect(await ledger.getCycle(cycle.id)).toMatchObject({ calls: 2, gross: 3_000_021n, fee: split.fee, net: split.net });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('a settlement intent carries the hold, so a payment recorded from the chain is held alike', async () => {
    const { ledger } = t;
    const owner = accountId('intent');
    const p = payment(owner, 500n);
    const nonce = String(Date.now());
    const base = { payer: p.payer, nonce, expirationLedger: 100, startLedger: 90, network: p.network, asset: p.asset, payTo: p.payTo };
    const intent = { ...base, service: p.service, publisherOwner: owner, amount: 500n, resolveBy: new Date(Date.now() + 60_000), holdMs: 600_000 };
    expect(await ledger.exactIntents.open(intent)).toMatchObject({ opened: true, intent: { holdMs: 600_000 } });
    expect((await ledger.exactIntents.get(p.payer, nonce))!.holdMs).toBe(600_000);
    const { payment: recorded } = await ledger.recordExactPayment({ ...p, intentNonce: nonce, holdMs: 600_000 });
    expect(recorded.holdUntil).not.toBeNull();
    const cycle = await ledger.openCycle(owner);
    expect(await ledger.claimEarnings(cycle.id, { batch: true })).toMatchObject({ claimed: 0 });
  });
});
