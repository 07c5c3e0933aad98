// Issue 46, item 1, "Charged only for an answer": a stock x402 client (@x402/fetch + @x402/stellar, unmodified, in its
// own process) pays @farebox/provider services through the platform's facilitator on a devnet standing in for
// testnet. By default a service settles only once its handler answered: a handler that throws, or does not answer in
// time, moves no money and records no earning, and says so; a handler that answers is settled once (one chain
// transaction); an answer whose settlement fails is withheld. A service that opts into settling before its handler
// runs (exact.settle: 'before-handler') and then fails refunds the payer in full (POST /x402/refund, signed by its
// owner's key): the treasury sends the amount back and the earning is reversed; forged refund requests move nothing.
import { type Keypair, Networks, type Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { exactRefundMessage, splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startX402World, type X402World } from './x402-kit.js';

const PRICE = 1_000_021n; // 0.1000021 USDC
const id = process.pid % 100_000;
const SERVICE = `answers-${id}`;
const SLOW = `slow-${id}`;
const FIRST = `settles-first-${id}`;

let world: X402World;
let owner: Keypair;
let firstOwner: Keypair;
let payer: Keypair;
let endpoint: string;
let slowEndpoint: string;
let firstEndpoint: string;
/** The answered call's settlement transaction (a payment of SERVICE, refundable by its owner until a batch claims it). */
let answered = '';
/** The settle-first call's settlement transaction (refunded). */
let refundedPayment = '';
/** Resolves when the slow service's handler has finished (after the provider stopped waiting for it). */
let slowDone: Promise<void> = Promise.resolve();

beforeAll(async () => {
  world = await startX402World('x402-failed-handler');
  [owner, firstOwner, payer] = await Promise.all([world.account(), world.account(), world.account(20n * PRICE)]);
  endpoint = await world.publish({
    service: SERVICE,
    price: PRICE,
    owner,
    handler: async (payload) => {
      const asked = (payload as { do?: string }).do;
      if (asked === 'fail') throw new Error('the model is down');
      if (asked === 'late') {
        // The answer comes after the payer's authorization expired (60 s at testnet's 5 s ledgers: 12 ledgers).
        const until = world.gw.devnet!.stats().ledger + 20;
        while (world.gw.devnet!.stats().ledger <= until) {
          world.gw.devnet!.closeLedger();
          await new Promise((r) => setImmediate(r));
        }
      }
      return { echo: payload };
    },
  });
  slowEndpoint = await world.publish({
    service: SLOW,
    price: PRICE,
    owner,
    exact: { maxTimeoutSeconds: 2 },
    handler: (payload) => {
      const answer = new Promise<unknown>((resolve) => setTimeout(() => resolve({ echo: payload }), 4_000));
      slowDone = answer.then(() => undefined);
      return answer;
    },
  });
  firstEndpoint = await world.publish({
    service: FIRST,
    price: PRICE,
    owner: firstOwner,
    exact: { settle: 'before-handler' },
    handler: () => {
      throw new Error('the printer jammed');
    },
  });
}, 90_000);

afterAll(async () => {
  await world?.close();
});

/** Every balance involved, both owners' earnings and the chain's transaction count. */
async function snapshot() {
  const [p, t] = await Promise.all([world.chain.balances(payer.publicKey()), world.chain.balances(world.treasury)]);
  return {
    payer: { usdc: p.usdc, xlm: p.xlm },
    treasury: t.usdc,
    earnings: await world.gw.core.ledger.publisherTotals(owner.publicKey()),
    firstEarnings: await world.gw.core.ledger.publisherTotals(firstOwner.publicKey()),
    transactions: world.gw.devnet!.stats().transactions,
  };
}

/** The ledger through which the payer's signed authorization in a PAYMENT-SIGNATURE header can be submitted. */
function expiresAfter(header: string): number {
  const payload = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: { transaction: string } };
  const tx = TransactionBuilder.fromXDR(payload.payload.transaction, Networks.TESTNET);
  const op = (tx as unknown as { operations: Operation.InvokeHostFunction[] }).operations[0]!;
  return op.auth![0]!.credentials().address().signatureExpirationLedger();
}

async function send(url: string, paymentSignature: string, body: unknown) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'PAYMENT-SIGNATURE': paymentSignature },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, receipt: res.headers.get('PAYMENT-RESPONSE') };
}

/** A refund request for `transaction` of `service`, signed by `signer` now. */
async function refundRequest(transaction: string, service: string, signer: Keypair) {
  const timestamp = Date.now();
  const message = exactRefundMessage({ network: 'stellar:testnet', service, transaction, timestamp });
  return { transaction, service, timestamp, signature: signer.sign(Buffer.from(message)).toString('base64') };
}

async function postRefund(body: unknown) {
  const res = await fetch(`${world.gw.url}/x402/refund`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const notCharged = (service: string, header: string) =>
  `${service} failed before the payment was settled, so nothing moved from ${payer.publicKey()}: the signed authorization (0.1000021 USDC, valid through ledger ${expiresAfter(header)}) was not submitted, and ${service} refuses it from now on; sign a new payment to try again`;

describe('a @farebox/provider service paid with x402 exact is settled only for an answer', () => {
  it('a handler that throws: 500 saying nothing was charged; the payer’s USDC unchanged to the base unit, no transaction, no earning; the payment refused if presented again', async () => {
    const before = await snapshot();
    const out = await world.stock('pay', endpoint, payer, { do: 'fail' });
    expect(out.status).toBe(500);
    expect(out.body).toEqual({
      error: 'the model is down; nothing was charged: the payment was not settled',
      payment: { settled: false, charged: '0', payer: payer.publicKey(), network: 'stellar:testnet', note: notCharged(SERVICE, out.paymentSignature!) },
    });
    // Nothing was settled, so no PAYMENT-RESPONSE.
    expect(out.paymentResponse).toBeNull();
    expect(await snapshot()).toEqual(before);
    expect(before.earnings).toMatchObject({ calls: 0, gross: 0n, pending: 0n });

    // The signed authorization is still valid on chain until it expires, but the service never uses it: presented again, refused.
    const again = await send(endpoint, out.paymentSignature!, { do: 'echo' });
    expect(again).toEqual({
      status: 409,
      body: { error: `this payment was already presented to ${SERVICE} (replay): pay again with a new authorization` },
      receipt: null,
    });
    expect(await snapshot()).toEqual(before);
  }, 60_000);

  it('a handler that answers is settled once: one chain transaction, the price moved, PAYMENT-RESPONSE success, one earning', async () => {
    const before = await snapshot();
    const out = await world.stock('pay', endpoint, payer, { do: 'echo', city: 'Lisbon' });
    expect(out).toMatchObject({
      status: 200,
      body: { echo: { do: 'echo', city: 'Lisbon' } },
      paymentResponse: { success: true, network: 'stellar:testnet', payer: payer.publicKey() },
    });
    answered = out.paymentResponse!.transaction;
    const after = await snapshot();
    expect(after.transactions).toBe(before.transactions + 1);
    expect(after.payer).toEqual({ usdc: before.payer.usdc! - PRICE, xlm: before.payer.xlm });
    expect(after.treasury).toBe(before.treasury! + PRICE);
    expect(await world.gw.core.ledger.exactPayment(out.paymentResponse!.transaction)).toMatchObject({
      amount: PRICE,
      service: SERVICE,
      publisherOwner: owner.publicKey(),
      payer: payer.publicKey(),
    });
    const { fee, net } = splitFee(PRICE);
    expect(after.earnings).toMatchObject({ calls: 1, gross: PRICE, fee, pending: net });
  }, 60_000);

  it('a handler that answers after the authorization expired: the settlement fails, 402 with PAYMENT-RESPONSE success: false, the answer withheld, nothing moved', async () => {
    const before = await snapshot();
    const out = await world.stock('pay', endpoint, payer, { do: 'late' });
    expect(out.status).toBe(402);
    // The payment-required body, a fresh quote: the reason, what happened, and no result.
    expect(out.body).not.toHaveProperty('echo');
    expect(out.body).toMatchObject({
      error: 'invalid_exact_stellar_payload_simulation_failed',
      message: `${SERVICE} answered, but the payment could not be settled (the facilitator could not settle the payment: invalid_exact_stellar_payload_simulation_failed): the answer is withheld and nothing was charged; pay again with a new authorization`,
    });
    expect(out.paymentResponse).toEqual({
      success: false,
      errorReason: 'invalid_exact_stellar_payload_simulation_failed',
      transaction: '',
      network: 'stellar:testnet',
      payer: payer.publicKey(),
    });
    expect(await snapshot()).toEqual(before);
  }, 60_000);

  it('a handler that does not answer within maxTimeoutSeconds: 504 saying nothing was charged, and its late answer moves nothing', async () => {
    const before = await snapshot();
    const out = await world.stock('pay', slowEndpoint, payer, { city: 'Porto' });
    expect(out.status).toBe(504);
    expect(out.body).toEqual({
      error: `${SLOW} did not answer within 2 s; nothing was charged: the payment was not settled`,
      payment: { settled: false, charged: '0', payer: payer.publicKey(), network: 'stellar:testnet', note: notCharged(SLOW, out.paymentSignature!) },
    });
    expect(out.paymentResponse).toBeNull();
    await slowDone;
    await new Promise((r) => setTimeout(r, 200));
    expect(await snapshot()).toEqual(before);
  }, 60_000);

  it('settle-first (exact.settle: before-handler): a handler that throws is refunded in full: the payer’s USDC back to the base unit, the treasury back, no earning', async () => {
    const before = await snapshot();
    const out = await world.stock('pay', firstEndpoint, payer, {});
    expect(out.status).toBe(500);
    const transaction = out.paymentResponse!.transaction;
    refundedPayment = transaction;
    expect(out.paymentResponse).toMatchObject({ success: true, payer: payer.publicKey() });
    const refund = (out.body.payment as { refund_transaction: string }).refund_transaction;
    expect(refund).toMatch(/^[0-9a-f]{64}$/);
    expect(refund).not.toBe(transaction);
    expect(out.body).toEqual({
      error: 'the printer jammed; the payment was refunded in full',
      payment: {
        settled: true,
        refunded: true,
        refund_transaction: refund,
        transaction,
        network: 'stellar:testnet',
        payer: payer.publicKey(),
        amount: PRICE.toString(),
        charged: '0',
        note: `${FIRST} settles before its handler runs and failed after the payment was settled: 0.1000021 USDC went back to ${payer.publicKey()} in transaction ${refund}; nothing was charged`,
      },
    });
    const after = await snapshot();
    // Two transactions (the payment, the refund); the payer's USDC and XLM as before, the treasury's USDC as before.
    expect(after.transactions).toBe(before.transactions + 2);
    expect(after.payer).toEqual(before.payer);
    expect(after.treasury).toBe(before.treasury);
    // The earning is reversed: the owner's figures count nothing.
    expect(after.firstEarnings).toEqual(before.firstEarnings);
    expect(after.firstEarnings).toMatchObject({ calls: 0, gross: 0n, pending: 0n });
    expect(after.earnings).toEqual(before.earnings);
    const { rows } = await world.gw.core.ledger.db.query(
      'SELECT state, refund_tx_hash, payer, amount, publisher_owner FROM exact_refunds WHERE payment_tx_hash = $1',
      [transaction],
    );
    expect(rows).toEqual([
      { state: 'refunded', refund_tx_hash: refund, payer: payer.publicKey(), amount: PRICE.toString(), publisher_owner: firstOwner.publicKey() },
    ]);
    // The next settlement batch of the owner pays nothing for it (nothing to settle), and takes no fee.
    expect(await world.gw.core.settlement.engine!.settleNow(firstOwner.publicKey())).toBeNull();
    expect((await world.chain.balances(firstOwner.publicKey())).usdc).toBe(0n);
    expect((await world.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 90_000);

  it('forged refund requests are refused and move nothing: the wrong key, another service, a second refund', async () => {
    const before = await snapshot();
    const refusals = [
      // The answered call's payment, signed by another owner's key.
      [await refundRequest(answered, SERVICE, firstOwner), 403, 'farebox_refund_bad_signature'],
      // Another owner asks for it as its own service's.
      [await refundRequest(answered, FIRST, firstOwner), 403, 'farebox_refund_bad_signature'],
      // Its own owner names another service.
      [await refundRequest(answered, FIRST, owner), 409, 'farebox_refund_other_service'],
      // The refunded payment again, by its owner.
      [await refundRequest(refundedPayment, FIRST, firstOwner), 409, 'farebox_refund_exists'],
      // A signature made for another timestamp.
      [{ ...(await refundRequest(answered, SERVICE, owner)), timestamp: Date.now() + 1 }, 403, 'farebox_refund_bad_signature'],
      // Unknown payment.
      [await refundRequest('ab'.repeat(32), SERVICE, owner), 404, 'farebox_refund_unknown_payment'],
    ] as const;
    for (const [body, status, reason] of refusals) {
      const res = await postRefund(body);
      expect({ status: res.status, reason: res.body.reason, refunded: res.body.refunded }).toEqual({ status, reason, refunded: false });
    }
    expect(await snapshot()).toEqual(before);
  }, 60_000);

  it('the next settlement batch pays the owner 95 % of the one answered call only', async () => {
    const cycle = await world.gw.core.settlement.engine!.settleNow(owner.publicKey());
    const { fee, net } = splitFee(PRICE);
    expect(cycle).toMatchObject({ state: 'done', calls: 1, gross: PRICE, fee, net });
    expect((await world.gw.core.ledger.verify()).mismatches).toEqual([]);
    // Paid out: its owner can no longer have it refunded, and nothing moves.
    const before = await snapshot();
    const late = await postRefund(await refundRequest(answered, SERVICE, owner));
    expect({ status: late.status, reason: late.body.reason }).toEqual({ status: 409, reason: 'farebox_refund_paid_out' });
    expect(await snapshot()).toEqual(before);
  }, 60_000);
});
