// Issue 46, item 1, "Charged only for an answer": a stock x402 client (@x402/fetch + @x402/stellar, unmodified, in its
// own process) pays @farebox/provider services through the platform's facilitator on a devnet standing in for
// testnet. By default a service settles only once its handler answered: a handler that throws, or does not answer in
// time, moves no money and records no earning, and says so; a handler that answers is settled once (one chain
// transaction); an answer whose settlement fails is withheld. A service that opts into settling before its handler
// runs (exact.settle: 'before-handler') still leaves the payer charged when its handler fails (the refund is by hand).
import { type Keypair, Networks, type Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { splitFee } from '@farebox/protocol';
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

  it('settle-first (exact.settle: before-handler): a handler that throws leaves the payer charged, says so, and the refund is by hand', async () => {
    const before = await snapshot();
    const out = await world.stock('pay', firstEndpoint, payer, {});
    expect(out.status).toBe(500);
    const transaction = out.paymentResponse!.transaction;
    expect(out.paymentResponse).toMatchObject({ success: true, payer: payer.publicKey() });
    expect(out.body).toEqual({
      error: 'the printer jammed',
      payment: {
        settled: true,
        transaction,
        network: 'stellar:testnet',
        payer: payer.publicKey(),
        amount: PRICE.toString(),
        refund: `the payment was settled before the service failed (${FIRST} settles before its handler runs); it is recorded with its transaction: ask ${FIRST}'s owner for a refund`,
      },
    });
    const after = await snapshot();
    expect(after.payer.usdc).toBe(before.payer.usdc! - PRICE);
    expect(after.firstEarnings).toMatchObject({ calls: 1, gross: PRICE });
    expect(after.earnings).toEqual(before.earnings);
  }, 60_000);

  it('the next settlement batch pays the owner 95 % of the one answered call only', async () => {
    const cycle = await world.gw.core.settlement.engine!.settleNow(owner.publicKey());
    const { fee, net } = splitFee(PRICE);
    expect(cycle).toMatchObject({ state: 'done', calls: 1, gross: PRICE, fee, net });
    expect((await world.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 60_000);
});
