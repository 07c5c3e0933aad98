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
