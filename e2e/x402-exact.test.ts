// Issue 37's acceptance: a stock x402 client (@x402/fetch + @x402/stellar's ExactStellarScheme, unmodified, in its
// own process: x402-stock-client.mjs) pays a @farebox/provider service on a gateway whose embedded devnet runs under
// the testnet passphrase, through the platform's facilitator (<gateway>/x402); the 95/5 split to the base unit; and the
// same client refused, with nothing moved, for a tampered amount, another payee, an expired authorization and a replay.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keypair, Networks, type Operation, TransactionBuilder } from '@stellar/stellar-sdk';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { splitFee } from '@farebox/protocol';
import { createProvider } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner, servicePayTo } from '@farebox/stellar';
import { eventually, httpsProxy, testTls, type HttpsProxy } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'x402-stock-client.mjs');
const PRICE = 1_000_021n; // 0.1000021 USDC: 5 % is 50,001.05, so the split shows its rounding
const SERVICE = `stock-x402-${process.pid % 100_000}`;

let gw: RunningGateway;
let proxy: HttpsProxy;
let endpoint: string;
let owner: Keypair;
let payer: Keypair;
let treasury: string;
let closeProvider: () => Promise<void>;
let chain: ReturnType<typeof createAccounts>;

beforeAll(async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-x402-e2e-'));
  gw = await startGateway({
    port: 0,
    network: 'local',
    env: { FAREBOX_DEVNET_PASSPHRASE: 'testnet' },
    allowLoopbackEndpoints: true,
    dataDir,
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    logLevel: 'warn',
    // Batches run when the test asks (settleNow), not on a timer.
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
  });
  // The stock client refuses plain http: it reaches the embedded devnet's RPC through an https proxy the run trusts.
  proxy = await httpsProxy(gw.url);
  treasury = gw.core.treasuryAddress;
  chain = createAccounts(gw.core.network);
  // The treasury's USDC trustline (an exact payment is a USDC transfer into it): the gateway sets it up itself as it starts
  // (a second trustline transaction from the treasury meanwhile would race it for the sequence number: tx_bad_seq).
  await eventually('the gateway set up the treasury’s USDC trustline', async () => (await chain.balances(treasury)).usdc !== null, { timeoutMs: 20_000 });
  const account = async (usdc = 0n) => {
    const kp = Keypair.random();
    await gw.devnet!.friendbot(kp.publicKey());
    await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
    if (usdc > 0n) await gw.devnet!.friendbot(kp.publicKey(), usdc);
    return kp;
  };
  [owner, payer] = await Promise.all([account(), account(10n * PRICE)]);

  const registry = createRegistryClient(gw.core.network);
  const provider = createProvider({
    service: SERVICE,
    pricePerCall: '0.1000021',
    description: 'echoes its payload, paid with x402 exact',
    network: 'local',
    devnetUrl: gw.devnet!.url,
    devnetPassphrase: 'testnet',
    // The platform's facilitator, <url>/x402, settles exact payments by default.
    platform: { publicKey: gw.core.platformPublicKey, url: gw.url },
    wallet: { secret: owner.secret() },
    registry,
    exact: { servedStorePath: join(dataDir, 'served-exact-payments.json') },
    env: {},
  }).serve((payload) => ({ echo: payload }));
  const listening = await provider.listen(0, '127.0.0.1');
  closeProvider = () => provider.close();
  endpoint = `${listening.url}/`;
  await registry.register(keypairSigner(owner.secret()), {
    service: SERVICE,
    pricePerCall: PRICE,
    endpoint,
    description: 'echoes its payload, paid with x402 exact',
  });
  await gw.core.mirror.syncOnce();
}, 60_000);

afterAll(async () => {
  await closeProvider?.();
  await proxy?.close();
  await gw?.close();
});

/** Runs the stock client in its own process (async: the gateway answers from this one). */
function stock(mode: 'pay' | 'sign', body: unknown, env: Record<string, string> = {}): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [SCRIPT, mode, endpoint, JSON.stringify(body)],
      {
        cwd: dirname(SCRIPT),
        env: {
          PATH: process.env.PATH ?? '',
          NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS ?? testTls().certPath,
          X402_SECRET: payer.secret(),
          X402_RPC_URL: `${proxy.url}/devnet/soroban/rpc`,
          ...env,
        },
        timeout: 30_000,
      },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`x402-stock-client.mjs ${mode} failed: ${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!));
      },
    );
  });
}

async function send(paymentSignature: string | undefined, body: unknown) {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(paymentSignature ? { 'PAYMENT-SIGNATURE': paymentSignature } : {}) },
    body: JSON.stringify(body),
  });
  const required = res.headers.get('PAYMENT-REQUIRED');
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, required: required ? decodePaymentRequiredHeader(required) : null };
}

/** What a refusal must leave as it was: every balance involved and the owner's earnings. */
async function snapshot() {
  const [p, t, o] = await Promise.all([chain.balances(payer.publicKey()), chain.balances(treasury), chain.balances(owner.publicKey())]);
  return { payer: { usdc: p.usdc, xlm: p.xlm }, treasury: t.usdc, owner: o.usdc, earnings: await gw.core.ledger.publisherTotals(owner.publicKey()) };
}

/** The ledger after which the payer's signed authorization in a PAYMENT-SIGNATURE header expires. */
function expiresAfter(header: string): number {
  const payload = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { payload: { transaction: string } };
  const tx = TransactionBuilder.fromXDR(payload.payload.transaction, Networks.TESTNET);
  const op = (tx as unknown as { operations: Operation.InvokeHostFunction[] }).operations[0]!;
  return op.auth![0]!.credentials().address().signatureExpirationLedger();
}

describe('a stock @x402/fetch + @x402/stellar client pays a @farebox/provider service on a devnet standing in for testnet', () => {
  let paid: { paymentSignature: string; transaction: string };

  it('gets its answer; the payer’s USDC falls by the price, the treasury’s rises by it, fees sponsored, the earning recorded once', async () => {
    // The offer names testnet's own USDC contract: the client's spend controls allow it as they would on testnet.
    expect((await send(undefined, {})).required?.accepts[0]).toMatchObject({
      network: 'stellar:testnet',
      asset: 'CBIELTK6YBZJU5UP2WWQEUCYKLPU6AUNZ2BQ4WWFEIE3USCIHMXQDAMA',
    });
    const before = await snapshot();
    const out = await stock('pay', { city: 'Lisbon' });
    expect(out).toMatchObject({
      status: 200,
      body: { echo: { city: 'Lisbon' } },
      paymentResponse: { success: true, network: 'stellar:testnet', payer: payer.publicKey() },
    });
    const transaction = out.paymentResponse.transaction as string;
    expect(transaction).toMatch(/^[0-9a-f]{64}$/);
    paid = { paymentSignature: out.paymentSignature, transaction };

    const after = await snapshot();
    expect(after.payer).toEqual({ usdc: before.payer.usdc! - PRICE, xlm: before.payer.xlm });
    expect(after.treasury).toBe(before.treasury! + PRICE);
    expect(after.owner).toBe(before.owner);
    // The earning: once, the service owner's, of what the transaction moved.
    expect(await gw.core.ledger.exactPayment(transaction)).toMatchObject({
      amount: PRICE,
      service: SERVICE,
      publisherOwner: owner.publicKey(),
      payer: payer.publicKey(),
      payTo: treasury,
      network: 'stellar:testnet',
    });
    const { fee, net } = splitFee(PRICE);
    expect(after.earnings).toMatchObject({ calls: 1, gross: PRICE, fee, pending: net });
  }, 30_000);

  it('is refused, with nothing moved, for a tampered amount, another payee, an expired authorization and a replayed payload', async () => {
    const start = await snapshot();
    const unchanged = async (what: string) => expect(await snapshot(), what).toEqual(start);

    // Replayed: the very PAYMENT-SIGNATURE the client sent for the paid call.
    const replay = await send(paid.paymentSignature, { city: 'Lisbon' });
    expect(replay).toMatchObject({
      status: 409,
      body: { error: `this payment was already presented to ${SERVICE} (replay): pay again with a new authorization` },
    });
    await unchanged('replay');

    // Tampered amount: a transaction signed for 1 base unit less than the price, sent as what it is...
    const cheaper = String(PRICE - 1n);
    const signedLess = await stock('sign', { city: 'Porto' }, { X402_SIGN_AMOUNT: cheaper });
    const less = await send(signedLess.header, { city: 'Porto' });
    expect(less).toMatchObject({
      status: 402,
      body: {
        error: 'invalid_exact_stellar_payload_wrong_amount',
        message: `the payment is for ${cheaper} base units, this payload's price is ${PRICE} base units`,
      },
    });
    expect(less.required?.accepts.find((a) => a.scheme === 'exact')).toMatchObject({ amount: PRICE.toString(), payTo: servicePayTo(treasury, SERVICE) });
    await unchanged('signed for less');
    // ...and claiming the service's offer (accepted = the offer, the transaction moving less): the facilitator reads the transaction.
    const claimed = await stock('sign', { city: 'Porto' }, { X402_SIGN_AMOUNT: cheaper, X402_CLAIM_OFFER: '1' });
    expect(await send(claimed.header, { city: 'Porto' })).toMatchObject({
      status: 402,
      body: { error: 'invalid_exact_stellar_payload_wrong_amount', message: 'the facilitator refused the payment: invalid_exact_stellar_payload_wrong_amount' },
    });
    await unchanged('signed for less, claiming the price');

    // Another payee: the transfer signed to the owner directly instead of the treasury, sent as what it is, then claiming the offer.
    const elsewhere = await stock('sign', { city: 'Faro' }, { X402_SIGN_PAY_TO: owner.publicKey() });
    expect(await send(elsewhere.header, { city: 'Faro' })).toMatchObject({
      status: 402,
      body: {
        error: 'invalid_exact_stellar_payload_wrong_recipient',
        message: `the payment pays ${owner.publicKey()}, this service is paid to ${servicePayTo(treasury, SERVICE)}`,
      },
    });
    const elsewhereClaimed = await stock('sign', { city: 'Faro' }, { X402_SIGN_PAY_TO: owner.publicKey(), X402_CLAIM_OFFER: '1' });
    expect(await send(elsewhereClaimed.header, { city: 'Faro' })).toMatchObject({
      status: 402,
      body: {
        error: 'invalid_exact_stellar_payload_wrong_recipient',
        message: 'the facilitator refused the payment: invalid_exact_stellar_payload_wrong_recipient',
      },
    });
    await unchanged('another payee');

    // Expired: signed, then the devnet closes ledgers past the authorization's expiration before it is sent.
    const late = await stock('sign', { city: 'Braga' });
    const expiry = expiresAfter(late.header);
    expect(expiry).toBeGreaterThan(gw.devnet!.stats().ledger);
    for (let i = 0; i < 100 && gw.devnet!.stats().ledger <= expiry; i++) {
      gw.devnet!.closeLedger();
      await new Promise((r) => setImmediate(r));
    }
    const expired = await send(late.header, { city: 'Braga' });
    // The facilitator's re-simulation fails as on testnet (the host's Error(Auth, InvalidInput) for an expired signature).
    expect(expired).toMatchObject({
      status: 402,
      body: {
        error: 'invalid_exact_stellar_payload_simulation_failed',
        message: 'the facilitator refused the payment: invalid_exact_stellar_payload_simulation_failed',
      },
    });
    await unchanged('expired');
    // Still unpaid after all that: the service quotes the price again, and nothing was served.
    expect((await send(undefined, { city: 'Braga' })).status).toBe(402);
  }, 60_000);

  it('the next settlement batch pays the owner 95 % and the platform keeps 5 %, to the base unit', async () => {
    const before = await snapshot();
    const cycle = await gw.core.settlement.engine!.settleNow(owner.publicKey());
    const { fee, net } = splitFee(PRICE);
    expect(fee).toBe(50_001n);
    expect(net).toBe(950_020n);
    expect(cycle).toMatchObject({ state: 'done', calls: 1, gross: PRICE, fee, net, funded: PRICE });
    const after = await snapshot();
    expect(after.owner).toBe(before.owner! + net);
    // The treasury had received the whole price; it keeps the fee.
    expect(after.treasury).toBe(before.treasury! - net);
    expect(after.payer).toEqual(before.payer);
    expect(after.earnings).toMatchObject({ calls: 1, gross: PRICE, fee, settled: net, pending: 0n });
    expect((await gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 60_000);
});
