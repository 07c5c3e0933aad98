import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitFee } from '@farebox/protocol';
import { migrateLedger, type ExactIntentInput, type ExactPaymentInput } from '@farebox/ledger';
import { accountId, migrationsAfter, openLedgerAt, openTestLedger, type TestLedger } from './helpers.js';

// x402 `exact` payments (migration 0015): recorded once per transaction as the service's earning, settled like a
// posted call's; and the per-payer daily bound on sponsored fees, enforced in one statement.

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

const hash = () => randomBytes(32).toString('hex');
const payment = (owner: string, amount: bigint, over: Partial<ExactPaymentInput> = {}): ExactPaymentInput => ({
  txHash: hash(),
  network: 'stellar:testnet',
  asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
  payer: `GPAYER${randomBytes(4).toString('hex')}`,
  payTo: 'GTREASURY',
  service: 'weather',
  publisherOwner: owner,
  amount,
  feeCharged: 10_123n,
  ...over,
});

describe('an exact payment', () => {
  it('is recorded once per transaction as the service earning, and a retry records nothing', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const input = payment(owner, 1_000_021n);
    const first = await ledger.recordExactPayment(input);
    expect(first).toMatchObject({ recorded: true, payment: { txHash: input.txHash, amount: 1_000_021n, service: 'weather', publisherOwner: owner } });
    // The same hash again (a retried settle), even upper-case or with another amount: nothing new.
    const again = await ledger.recordExactPayment({ ...input, txHash: input.txHash.toUpperCase(), amount: 5n });
    expect(again).toEqual({ recorded: false, payment: first.payment });
    const { rows } = await ledger.db.query('SELECT gross, fee, net, hold_id, payer_account_id FROM earnings WHERE publisher_owner = $1', [owner]);
    const split = splitFee(1_000_021n);
    expect(rows).toEqual([{ gross: '1000021', fee: split.fee.toString(), net: split.net.toString(), hold_id: null, payer_account_id: null }]);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: 1_000_021n, fee: split.fee, pending: split.net });
    expect(await ledger.exactPayment(input.txHash)).toEqual(first.payment);
    expect(await ledger.exactPayment(hash())).toBeNull();
    const report = await ledger.verify();
    expect(report.mismatches).toEqual([]);
  });

  it('is claimed by the owner’s next cycle with the fee taken once on the cycle total, beside a posted call', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const payer = accountId('payer');
    await ledger.openAccount(payer);
    const { hold } = await ledger.hold(payer, 21n, { callId: 'c1', service: 'weather' });
    await ledger.post(hold.id, { publisherOwner: owner, service: 'weather', gross: 21n });
    await ledger.recordExactPayment(payment(owner, 19n));
    const cycle = await ledger.openCycle(owner);
    const claim = await ledger.claimEarnings(cycle.id, { batch: true });
    // 40 base units: 5 % is 2, once on the total (per earning floored it would be 1 + 0).
    expect(claim).toMatchObject({ claimed: 2, gross: 40n, fee: 2n, net: 38n, batch: { amount: 40n } });
    await ledger.confirmFunding(claim.batch!.id, { txHash: hash() });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('refuses bad input with an exact message and writes nothing', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    await expect(ledger.recordExactPayment(payment(owner, 0n))).rejects.toMatchObject({ code: 'INVALID_AMOUNT' });
    await expect(ledger.recordExactPayment(payment(owner, 5n, { txHash: 'abc' }))).rejects.toThrow('txHash must be 64 hex characters');
    await expect(ledger.recordExactPayment(payment(owner, 5n, { service: '' }))).rejects.toThrow('service required');
    await expect(ledger.recordExactPayment(payment(owner, 5n, { feeCharged: -1n }))).rejects.toThrow('feeCharged must be a bigint >= 0');
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 0 });
  });

  it('and its earning cannot be changed or deleted, and verify() names a payment without its earning', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const { payment: p } = await ledger.recordExactPayment(payment(owner, 100n));
    await expect(ledger.db.query('UPDATE earnings SET exact_tx_hash = NULL WHERE id = $1', [p.earningId])).rejects.toThrow(
      'earnings: only an unset cycle or funding batch may be assigned',
    );
    await expect(ledger.db.query('UPDATE earnings SET gross = 1, net = 1, fee = 0 WHERE id = $1', [p.earningId])).rejects.toThrow(
      'earnings: only an unset cycle or funding batch may be assigned',
    );
    await expect(ledger.db.query('DELETE FROM exact_payments WHERE tx_hash = $1', [p.txHash])).rejects.toThrow('exact_payments is append-only');
    // An earning needs exactly one source: a hold, or an exact payment.
    await expect(
      ledger.db.query(`INSERT INTO earnings (publisher_owner, service, gross, fee, net) VALUES ($1, 'weather', 10, 0, 10)`, [owner]),
    ).rejects.toThrow('earning_source');
    // A payment written around the ledger, without its earning.
    const orphan = hash();
    await ledger.db.query(
      `INSERT INTO exact_payments (tx_hash, network, asset, payer, pay_to, service, publisher_owner, amount, fee_charged)
       VALUES ($1, 'stellar:testnet', 'C', 'G', 'G', 'weather', $2, 7, 0)`,
      [orphan, owner],
    );
    const report = await ledger.verify();
    expect(report.mismatches).toEqual([{ kind: 'exact-payment', id: orphan, expected: `one earning of 7 for weather of ${owner}`, actual: 'no earning' }]);
    // The earning it lacks, once recorded, makes the ledger whole again (the hash is taken: nothing is recorded).
    expect((await ledger.recordExactPayment(payment(owner, 7n, { txHash: orphan }))).recorded).toBe(false);
  });
});

describe('sponsored fees per payer and UTC day', () => {
  it('are reserved up to the bound, refused past it with nothing written, and given back', async () => {
    const { ledger } = t;
    const payer = `GFEES${randomBytes(6).toString('hex')}`;
    expect(await ledger.reserveSponsoredFee(payer, '2026-11-26', 400n, 1_000n)).toEqual({ reserved: true, total: 400n });
    expect(await ledger.reserveSponsoredFee(payer, '2026-11-26', 600n, 1_000n)).toEqual({ reserved: true, total: 1_000n });
    expect(await ledger.reserveSponsoredFee(payer, '2026-11-26', 1n, 1_000n)).toEqual({ reserved: false, total: 1_000n });
    expect(await ledger.sponsoredFees(payer, '2026-11-26')).toEqual({ total: 1_000n, settles: 2 });
    // Another day, another payer: their own totals. A first reservation above the bound is refused too.
    expect(await ledger.reserveSponsoredFee(payer, '2026-11-27', 1_001n, 1_000n)).toEqual({ reserved: false, total: 0n });
    expect(await ledger.sponsoredFees(payer, '2026-11-27')).toEqual({ total: 0n, settles: 0 });
    // What the network did not charge comes back; a transaction never sent uncounts its settle.
    expect(await ledger.releaseSponsoredFee(payer, '2026-11-26', 150n, { submitted: true })).toEqual({ total: 850n, settles: 2 });
    expect(await ledger.releaseSponsoredFee(payer, '2026-11-26', 450n, { submitted: false })).toEqual({ total: 400n, settles: 1 });
    await expect(ledger.reserveSponsoredFee(payer, '26-11-2026', 1n, 10n)).rejects.toThrow('day must be YYYY-MM-DD');
    await expect(ledger.reserveSponsoredFee(payer, '2026-11-26', -1n, 10n)).rejects.toThrow('amount must be a bigint >= 0');
  });

  it('count exactly under racing reservations: the bound is never passed', async () => {
    const { ledger } = t;
    const payer = `GRACE${randomBytes(6).toString('hex')}`;
    const results = await Promise.all(Array.from({ length: 40 }, () => ledger.reserveSponsoredFee(payer, '2026-11-26', 300n, 3_000n)));
    expect(results.filter((r) => r.reserved)).toHaveLength(10);
    expect(await ledger.sponsoredFees(payer, '2026-11-26')).toEqual({ total: 3_000n, settles: 10 });
  });
});

const intent = (owner: string, over: Partial<ExactIntentInput> = {}): ExactIntentInput => ({
  payer: `GPAYER${randomBytes(4).toString('hex')}`,
  nonce: String(randomBytes(4).readUInt32BE()),
  expirationLedger: 120,
  startLedger: 100,
  network: 'stellar:testnet',
  asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
  payTo: 'GTREASURY',
  service: 'weather',
  publisherOwner: owner,
  amount: 500n,
  resolveBy: new Date(Date.now() + 600_000),
  ...over,
});

describe('a settlement intent (migration 0016)', () => {
  it('is written once per payer and nonce, closed by the statement that records its payment, and stays settled', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const input = intent(owner);
    const opened = await ledger.exactIntents.open(input);
    expect(opened).toMatchObject({ opened: true, intent: { state: 'pending', amount: 500n, txHash: null, resolvedAt: null } });
    // The same authorization again (a second settle while the first is under way): nothing written, the first answered.
    expect(await ledger.exactIntents.open({ ...input, amount: 999n })).toMatchObject({ opened: false, intent: { state: 'pending', amount: 500n } });
    const p = payment(owner, 500n, { payer: input.payer, intentNonce: input.nonce });
    expect((await ledger.recordExactPayment(p)).recorded).toBe(true);
    const settled = await ledger.exactIntents.get(input.payer, input.nonce);
    expect(settled).toMatchObject({ state: 'settled', txHash: p.txHash });
    expect(settled!.resolvedAt).toBeInstanceOf(Date);
    // Final: it is neither failed nor opened again, and the payment is not recorded twice.
    expect(await ledger.exactIntents.close(input.payer, input.nonce, { state: 'failed', error: 'x' })).toMatchObject({
      resolved: false,
      intent: { state: 'settled' },
    });
    expect(await ledger.exactIntents.open(input)).toMatchObject({ opened: false, intent: { state: 'settled', txHash: p.txHash } });
    expect((await ledger.recordExactPayment({ ...p, txHash: p.txHash })).recorded).toBe(false);
    await expect(ledger.db.query(`UPDATE exact_intents SET state = 'failed', tx_hash = NULL WHERE payer = $1`, [input.payer])).rejects.toThrow(
      'exact_intents: a settled intent is final',
    );
    await expect(ledger.db.query('DELETE FROM exact_intents WHERE payer = $1', [input.payer])).rejects.toThrow('exact_intents are kept');
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: 500n });
  });

  it('closed as failed may be opened again; never settled is final; bad input is refused with nothing written', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const input = intent(owner);
    await ledger.exactIntents.open(input);
    expect(await ledger.exactIntents.close(input.payer, input.nonce, { state: 'failed', error: 'refused on chain' })).toMatchObject({
      resolved: true,
      intent: { state: 'failed', error: 'refused on chain' },
    });
    expect(await ledger.exactIntents.open({ ...input, startLedger: 110 })).toMatchObject({
      opened: true,
      intent: { state: 'pending', error: null, startLedger: 110, resolvedAt: null },
    });
    expect(await ledger.exactIntents.close(input.payer, input.nonce, { state: 'never_settled', error: 'expired' })).toMatchObject({
      resolved: true,
      intent: { state: 'never_settled' },
    });
    expect(await ledger.exactIntents.open(input)).toMatchObject({ opened: false, intent: { state: 'never_settled' } });
    await expect(ledger.exactIntents.open(intent(owner, { nonce: '1.5' }))).rejects.toThrow('nonce must be a 64-bit integer as text');
    await expect(ledger.exactIntents.open(intent(owner, { expirationLedger: 0 }))).rejects.toThrow('expirationLedger must be an integer from 1 to 4294967295');
    await expect(ledger.exactIntents.open(intent(owner, { amount: 0n }))).rejects.toMatchObject({ code: 'INVALID_AMOUNT' });
    const { rows } = await ledger.db.query('SELECT count(*)::int AS n FROM exact_intents WHERE publisher_owner = $1', [owner]);
    expect(rows[0]).toEqual({ n: 1 });
  });

  it('pending ones are taken by one reconciler at a time, and verify() names one left past its resolve_by', async () => {
    const { ledger } = t;
    const owner = accountId('owner');
    const late = intent(owner, { resolveBy: new Date(Date.now() - 1_000) });
    await ledger.exactIntents.open(late);
    const now = new Date(Date.now() + 60_000);
    const options = { olderThan: now, now, leaseMs: 30_000 };
    // Two reconcilers at once: each pending intent goes to one of them.
    const [a, b] = await Promise.all([ledger.exactIntents.due(options), ledger.exactIntents.due(options)]);
    const mine = (list: typeof a) => list.filter((i) => i.publisherOwner === owner);
    expect(mine(a).length + mine(b).length).toBe(1);
    // Within the lease nobody takes it again; after it, the next pass does.
    expect(mine(await ledger.exactIntents.due(options))).toEqual([]);
    const later = new Date(now.getTime() + 31_000);
    expect(mine(await ledger.exactIntents.due({ ...options, now: later }))).toHaveLength(1);
    // Newer than `olderThan`: not yet.
    expect(mine(await ledger.exactIntents.due({ olderThan: new Date(Date.now() - 60_000), now: new Date(later.getTime() + 60_000), leaseMs: 1 }))).toEqual([]);
    const report = await ledger.verify();
    expect(report.mismatches.filter((m) => m.kind === 'exact-intent')).toEqual([
      expect.objectContaining({
        kind: 'exact-intent',
        id: `${late.payer}/${late.nonce}`,
        actual: expect.stringMatching(/^pending since .*: 500 for weather of /),
      }),
    ]);
    await ledger.exactIntents.close(late.payer, late.nonce, { state: 'never_settled', error: 'expired' });
    expect((await ledger.verify()).mismatches.filter((m) => m.kind === 'exact-intent')).toEqual([]);
  });

  it('arrives with an upgrade from schema 15 that keeps the payments recorded', async () => {
    const { db, dispose } = await openLedgerAt(15);
    try {
      const tx = hash();
      await db.query(
        `INSERT INTO exact_payments (tx_hash, network, asset, payer, pay_to, service, publisher_owner, amount, fee_charged)
         VALUES ($1, 'stellar:testnet', 'C', 'GP', 'GT', 'weather', 'GO', 7, 0)`,
        [tx],
      );
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(15));
      await db.query(
        `INSERT INTO exact_intents (payer, nonce, expiration_ledger, start_ledger, network, asset, pay_to, service, publisher_owner, amount, resolve_by, state, tx_hash, resolved_at)
         VALUES ('GP', '42', 10, 5, 'stellar:testnet', 'C', 'GT', 'weather', 'GO', 7, now(), 'settled', $1, now())`,
        [tx],
      );
      const { rows } = await db.query('SELECT i.state, p.amount FROM exact_intents i JOIN exact_payments p USING (tx_hash)');
      expect(rows).toEqual([{ state: 'settled', amount: '7' }]);
    } finally {
      await dispose();
    }
  });
});
