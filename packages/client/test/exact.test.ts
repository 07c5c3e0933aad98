// x402 `exact` on Stellar, end to end on a devnet standing in for testnet: our
// client pays a stock x402 server and a @farebox/provider service through the
// stock facilitator; payments that do not match the offer move nothing.
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeExactPaymentHeader, X402_HEADERS, type ExactPayment } from '@farebox/protocol';
import { contract, Keypair, type Transaction, TransactionBuilder } from '@stellar/stellar-sdk';
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http';
import { HTTPFacilitatorClient, x402HTTPResourceServer, x402ResourceServer } from '@x402/core/server';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactStellarScheme as ExactServer } from '@x402/stellar/exact/server';
import { ExactStellarScheme as ExactClient } from '@x402/stellar/exact/client';
import { createEd25519Signer } from '@x402/stellar';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { servicePayTo } from '@farebox/stellar';
import { httpsProxy } from '@farebox/test-kit';
import { describe, expect, it } from 'vitest';
import { signExactTransfer } from '../src/direct/exact.js';
import { USDC, post, type Party } from './helpers.js';
import { useExactWorld } from './exact-world.js';

const world = useExactWorld();

const discovery = {
  input: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  output: { type: 'object', properties: { echo: { type: 'object' } } },
  example: { input: { text: 'hi' }, output: { echo: { text: 'hi' } } },
};

/** The 402 of `endpoint` for `payload`: its exact offer and resource, as the PAYMENT-REQUIRED header carries them. */
async function exactQuote(endpoint: string, payload: unknown) {
  const res = await post(endpoint, payload);
  expect(res.status).toBe(402);
  const required = decodePaymentRequiredHeader(res.headers.get(X402_HEADERS.paymentRequired)!);
  const offer = required.accepts.find((a) => a.scheme === 'exact')!;
  return { required, offer };
}

/** A payment payload signed by `payer` for `transfer` (what the transaction moves), claiming `accepted`. */
async function signedPayment(payer: Party, transfer: PaymentRequirements, accepted: PaymentRequirements, resource: ExactPayment['resource']): Promise<string> {
  const signer = {
    address: payer.publicKey,
    signAuthEntry: contract.basicNodeSigner(Keypair.fromSecret(payer.secret), world.devnet.network.passphrase).signAuthEntry,
  };
  const transaction = await signExactTransfer(world.devnet.network, signer, transfer);
  return encodeExactPaymentHeader({
    x402Version: 2,
    ...(resource ? { resource } : {}),
    accepted: accepted as ExactPayment['accepted'],
    payload: { transaction },
  });
}

describe('exact on a devnet under the testnet passphrase', () => {
  it('our client pays a stock x402 server (x402ResourceServer + ExactStellarScheme + the stock facilitator) and gets its answer', async () => {
    const seller = await world.party();
    const payer = await world.party(5n * USDC);
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: `${world.platformUrl}/x402` })).register(
      'stellar:testnet',
      new ExactServer(),
    );
    const http = new x402HTTPResourceServer(resourceServer, {
      'POST /weather': {
        accepts: {
          scheme: 'exact',
          network: 'stellar:testnet',
          payTo: seller.publicKey,
          price: { amount: '1250000', asset: world.devnet.network.usdc.contractId },
        },
        description: 'weather',
        mimeType: 'application/json',
      },
    });
    await http.initialize();
    const base = await world.serve(async (req, body) => {
      const url = new URL(req.url ?? '/', 'http://stock.test');
      const header = (name: string) => {
        const v = req.headers[name.toLowerCase()];
        return Array.isArray(v) ? v[0] : v;
      };
      const adapter = {
        getHeader: header,
        getMethod: () => req.method ?? 'GET',
        getPath: () => url.pathname,
        getUrl: () => `http://${req.headers.host}${url.pathname}`,
        getAcceptHeader: () => header('accept') ?? '',
        getUserAgent: () => header('user-agent') ?? '',
      };
      const paymentHeader = header('payment-signature') ?? header('x-payment');
      const context = { adapter, path: url.pathname, method: req.method ?? 'GET', ...(paymentHeader ? { paymentHeader } : {}) };
      const outcome = await http.processHTTPRequest(context);
      if (outcome.type === 'payment-error') return { status: outcome.response.status, headers: outcome.response.headers, body: outcome.response.body ?? {} };
      if (outcome.type !== 'payment-verified') return { status: 500, body: { error: 'the route should be paid' } };
      const settled = await http.processSettlement(outcome.paymentPayload, outcome.paymentRequirements, outcome.declaredExtensions, { request: context });
      if (!settled.success) return { status: 402, headers: settled.headers, body: { error: settled.errorReason } };
      return { status: 200, headers: settled.headers, body: { city: JSON.parse(body).city, forecast: 'sunny' } };
    });

    const before = [world.usdcOf(payer.publicKey), world.usdcOf(seller.publicKey)];
    const out = await world.client(payer).call({ endpoint: `${base}/weather`, ownerWallet: seller.publicKey }, { city: 'Lyon' });
    expect(out.scheme).toBe('exact');
    expect(out.result).toEqual({ city: 'Lyon', forecast: 'sunny' });
    expect(out.cost.baseUnits).toBe(1_250_000n);
    expect(out.transaction).toMatch(/^[0-9a-f]{64}$/);
    expect(out.payer).toBe(payer.publicKey);
    expect([world.usdcOf(payer.publicKey), world.usdcOf(seller.publicKey)]).toEqual([before[0]! - 1_250_000n, before[1]! + 1_250_000n]);
    expect(out.trace.steps.map((s) => [s.step, s.status])).toEqual([
      ['quote', 'ok'],
      ['call', 'ok'],
      ['settled', 'ok'],
    ]);
  });

  it('a @farebox/provider service offers exact (USDC contract, treasury payTo, fees sponsored, bazaar) and our client pays it: the payer down by the price, the treasury up by it', async () => {
    const svc = await world.publish('ex-echo', '0.25', { discovery });
    const payer = await world.party(5n * USDC);
    const { required, offer } = await exactQuote(svc.endpoint, { text: 'hi' });
    expect(offer).toEqual({
      scheme: 'exact',
      network: 'stellar:testnet',
      amount: '2500000',
      asset: world.devnet.network.usdc.contractId,
      // The treasury's address for this service: the payer signs which service it pays.
      payTo: servicePayTo(world.treasury.publicKey, 'ex-echo'),
      maxTimeoutSeconds: 60,
      extra: { areFeesSponsored: true, service: 'ex-echo' },
    });
    expect(required.resource.url).toBe(svc.endpoint);
    expect(required.extensions?.bazaar).toMatchObject({
      info: { input: { type: 'http', method: 'POST', bodyType: 'json', body: { text: 'hi' } }, output: { example: { echo: { text: 'hi' } } } },
    });
    const manifest = (await (await fetch(`${svc.endpoint}manifest`)).json()) as { payments: string[]; bazaar: unknown };
    expect(manifest.payments).toEqual(['exact']);
    expect(manifest.bazaar).toEqual(required.extensions?.bazaar);

    const before = [world.usdcOf(payer.publicKey), world.usdcOf(world.treasury.publicKey), world.usdcOf(svc.owner.publicKey)];
    const out = await world.client(payer).call('ex-echo', { text: 'hi' });
    expect(out).toMatchObject({ scheme: 'exact', result: { echo: { text: 'hi' } }, cost: { baseUnits: 2_500_000n }, payer: payer.publicKey });
    expect(out.escrowId).toBeUndefined();
    expect([world.usdcOf(payer.publicKey), world.usdcOf(world.treasury.publicKey), world.usdcOf(svc.owner.publicKey)]).toEqual([
      before[0]! - 2_500_000n,
      before[1]! + 2_500_000n,
      before[2],
    ]);
    const stored = JSON.parse(await readFile(svc.servedStorePath, 'utf8')) as {
      escrows: Record<string, { status: string; releaseTx?: string; payer: string }>;
    };
    expect(Object.entries(stored.escrows)).toEqual([
      [
        `exact:${payer.publicKey}:${Object.keys(stored.escrows)[0]!.split(':')[2]}`,
        expect.objectContaining({
          status: 'released',
          releaseTx: out.transaction,
          payer: payer.publicKey,
          amount: '2500000',
          quoteId: expect.stringMatching(/^exact:[0-9a-f]{64}$/),
        }),
      ],
    ]);
    expect(Object.keys(stored.escrows)[0]).toMatch(/^exact:G[A-Z2-7]{55}:-?\d+$/);
  });

  it("a stock @x402/fetch client with @x402/stellar's ExactStellarScheme, unmodified, pays a @farebox/provider service (its RPC over https)", async () => {
    const svc = await world.publish('ex-stock', '0.2');
    const payer = await world.party(5n * USDC);
    // The stock client builds with AssembledTransaction, which refuses http: it reaches the devnet's RPC through a TLS proxy the run trusts.
    const rpc = await httpsProxy(world.devnet.rpcUrl);
    try {
      const client = new x402Client().register('stellar:testnet', new ExactClient(createEd25519Signer(payer.secret, 'stellar:testnet'), { url: rpc.url }));
      const pay = wrapFetchWithPayment(fetch, client);
      const before = [world.usdcOf(payer.publicKey), world.usdcOf(world.treasury.publicKey)];
      const res = await pay(svc.endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stock: true }) });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ echo: { stock: true } });
      expect(decodePaymentResponseHeader(res.headers.get(X402_HEADERS.paymentResponseV2)!)).toMatchObject({
        success: true,
        network: 'stellar:testnet',
        payer: payer.publicKey,
      });
      expect([world.usdcOf(payer.publicKey), world.usdcOf(world.treasury.publicKey)]).toEqual([before[0]! - 2_000_000n, before[1]! + 2_000_000n]);
    } finally {
      await rpc.close();
    }
  });

  it('prefers exact when a service offers exact and escrow, and pays escrow where exact is not offered (or turned off)', async () => {
    const escrowed = (servedStorePath: string) => ({
      trustlessWork: { apiKey: 'provider-escrow-key', platformAddress: world.treasury.publicKey, baseUrl: `${world.devnet.url}/escrow` },
      servedStorePath,
    });
    const both = await world.publish('ex-both', '0.1', escrowed(join(await mkdtemp(join(tmpdir(), 'farebox-exact-')), 'served.json')));
    const escrowOnly = await world.publish('ex-escrow', '0.1', {
      exact: false,
      ...escrowed(join(await mkdtemp(join(tmpdir(), 'farebox-exact-')), 'served.json')),
    });
    const payer = await world.party(5n * USDC);
    const { required } = await exactQuote(both.endpoint, {});
    expect(required.accepts.map((a) => [a.scheme, a.payTo])).toEqual([
      ['exact', servicePayTo(world.treasury.publicKey, 'ex-both')],
      ['escrow', both.owner.publicKey],
    ]);
    expect(await world.client(payer).call('ex-both', { a: 1 })).toMatchObject({ scheme: 'exact', result: { echo: { a: 1 } } });
    const unpaid = await post(escrowOnly.endpoint, {});
    expect(decodePaymentRequiredHeader(unpaid.headers.get(X402_HEADERS.paymentRequired)!).accepts.map((a) => a.scheme)).toEqual(['escrow']);
    const viaEscrow = await world.client(payer).call('ex-escrow', { b: 2 });
    expect(viaEscrow).toMatchObject({ scheme: 'escrow', result: { echo: { b: 2 } }, escrowId: expect.stringMatching(/^C/) });
    expect(viaEscrow.trace.steps.map((s) => s.step)).toEqual(['quote', 'deploy', 'fund', 'call', 'settled']);
    const forced = await world.client(payer, { exact: false }).call('ex-both', { c: 3 });
    expect(forced.scheme).toBe('escrow');
  });

  it('refuses another amount, another payee, another network and a replayed payload with the reference reasons, moving nothing but the one good payment', async () => {
    const svc = await world.publish('ex-refuse', '0.1');
    const payer = await world.party(5n * USDC);
    const stranger = await world.party();
    const { required, offer } = await exactQuote(svc.endpoint, { n: 1 });
    const balances = () => [world.usdcOf(payer.publicKey), world.usdcOf(world.treasury.publicKey), world.usdcOf(stranger.publicKey)];
    const start = balances();
    const send = (header: string) => post(svc.endpoint, { n: 1 }, { [X402_HEADERS.paymentSignature]: header });

    const cases: Array<[string, PaymentRequirements, PaymentRequirements, string]> = [
      ['claims less', { ...offer, amount: '999999' }, { ...offer, amount: '999999' }, 'invalid_exact_stellar_payload_wrong_amount'],
      ['pays less than it claims', { ...offer, amount: '999999' }, offer, 'invalid_exact_stellar_payload_wrong_amount'],
      ['pays another payee', { ...offer, payTo: stranger.publicKey }, { ...offer, payTo: stranger.publicKey }, 'invalid_exact_stellar_payload_wrong_recipient'],
      ['another network', offer, { ...offer, network: 'stellar:pubnet' }, 'network_mismatch'],
    ];
    for (const [what, transfer, accepted, reason] of cases) {
      const res = await send(await signedPayment(payer, transfer, accepted, required.resource));
      expect([what, res.status, res.json?.error]).toEqual([what, 402, reason]);
      expect(decodePaymentRequiredHeader(res.headers.get(X402_HEADERS.paymentRequired)!).error).toBe(reason);
      expect(balances()).toEqual(start);
    }

    const good = await signedPayment(payer, offer, offer, required.resource);
    const paid = await send(good);
    expect(paid.status).toBe(200);
    const receipt = decodePaymentResponseHeader(paid.headers.get(X402_HEADERS.paymentResponseV2)!);
    expect(receipt).toMatchObject({ success: true, network: 'stellar:testnet', payer: payer.publicKey });
    const after = balances();
    expect(after).toEqual([start[0]! - 1_000_000n, start[1]! + 1_000_000n, start[2]]);

    const replay = await send(good);
    expect(replay.status).toBe(409);
    expect(replay.json?.error).toBe('this payment was already presented to ex-refuse (replay): pay again with a new authorization');
    // The same signed authorization in another transaction (another fee, so another hash) is the same payment.
    const payment = JSON.parse(Buffer.from(good, 'base64').toString('utf8')) as ExactPayment;
    const original = TransactionBuilder.fromXDR(payment.payload.transaction, world.devnet.network.passphrase) as Transaction;
    const rebuilt = TransactionBuilder.cloneFrom(original, {
      fee: String(Number(original.fee) + 1),
      sorobanData: original.toEnvelope().v1().tx().ext().sorobanData(),
    }).build();
    expect(rebuilt.hash().toString('hex')).not.toBe(original.hash().toString('hex'));
    const again = await send(encodeExactPaymentHeader({ ...payment, payload: { transaction: rebuilt.toXDR() } }));
    expect([again.status, again.json?.error]).toEqual([409, 'this payment was already presented to ex-refuse (replay): pay again with a new authorization']);
    expect(balances()).toEqual(after);
  });

  it('takes the same v2 payload in X-PAYMENT (answering X-PAYMENT-RESPONSE too) and quotes dynamic prices per payload', async () => {
    const svc = await world.publish('ex-dynamic', '0.1', { priceFn: (p) => ((p as { big?: boolean }).big ? '0.3' : '0.1') });
    const payer = await world.party(5n * USDC);
    const small = await exactQuote(svc.endpoint, { big: false });
    const big = await exactQuote(svc.endpoint, { big: true });
    expect([small.offer.amount, big.offer.amount]).toEqual(['1000000', '3000000']);
    const before = world.usdcOf(payer.publicKey);
    // Paid for the small payload, sent with the big one: this payload's price is not what was paid.
    const cheap = await post(
      svc.endpoint,
      { big: true },
      { [X402_HEADERS.payment]: await signedPayment(payer, small.offer, small.offer, small.required.resource) },
    );
    expect([cheap.status, cheap.json?.error, cheap.json?.message]).toEqual([
      402,
      'invalid_exact_stellar_payload_wrong_amount',
      "the payment is for 1000000 base units, this payload's price is 3000000 base units",
    ]);
    expect(world.usdcOf(payer.publicKey)).toBe(before);
    const paid = await post(svc.endpoint, { big: true }, { [X402_HEADERS.payment]: await signedPayment(payer, big.offer, big.offer, big.required.resource) });
    expect(paid.status).toBe(200);
    expect(paid.json).toEqual({ echo: { big: true } });
    expect(paid.headers.get(X402_HEADERS.paymentResponse)).toBe(paid.headers.get(X402_HEADERS.paymentResponseV2));
    expect(decodePaymentResponseHeader(paid.headers.get(X402_HEADERS.paymentResponse)!)).toMatchObject({ success: true, payer: payer.publicKey });
    expect(world.usdcOf(payer.publicKey)).toBe(before - 3_000_000n);
  });

  it('a handler that fails is never settled: 500 saying nothing was charged, the payer untouched, the payment refused if presented again', async () => {
    const svc = await world.publish('ex-fails', '0.1', {}, () => {
      throw new Error('the model is down');
    });
    const payer = await world.party(USDC);
    const { required, offer } = await exactQuote(svc.endpoint, {});
    const header = await signedPayment(payer, offer, offer, required.resource);
    const res = await post(svc.endpoint, {}, { [X402_HEADERS.paymentSignature]: header });
    expect(res.status).toBe(500);
    expect(res.headers.get(X402_HEADERS.paymentResponseV2)).toBeNull();
    expect(res.json).toEqual({
      error: 'the model is down; nothing was charged: the payment was not settled',
      payment: {
        settled: false,
        charged: '0',
        payer: payer.publicKey,
        network: 'stellar:testnet',
        note: expect.stringMatching(
          new RegExp(
            `^ex-fails failed before the payment was settled, so nothing moved from ${payer.publicKey}: the signed authorization \\(0\\.1 USDC, valid through ledger \\d+\\) was not submitted, and ex-fails refuses it from now on; sign a new payment to try again$`,
          ),
        ),
      },
    });
    expect(world.usdcOf(payer.publicKey)).toBe(USDC);
    const again = await post(svc.endpoint, {}, { [X402_HEADERS.paymentSignature]: header });
    expect([again.status, again.json?.error]).toEqual([409, 'this payment was already presented to ex-fails (replay): pay again with a new authorization']);
    expect(world.usdcOf(payer.publicKey)).toBe(USDC);
    const stored = JSON.parse(await readFile(svc.servedStorePath, 'utf8')) as { escrows: Record<string, { status: string; reason?: string }> };
    expect(Object.values(stored.escrows)).toEqual([
      expect.objectContaining({ status: 'abandoned', reason: 'not settled, nothing charged: the model is down' }),
    ]);
  });

  // The platform's facilitator refunds such a payment in full (e2e/x402-exact-failed-handler.test.ts); this world's stand-in is the
  // stock facilitator, which has no refund operation: the answer says the refund was refused and who to ask.
  it("exact.settle: 'before-handler' settles first: a handler failing after settlement answers 500 saying where the money went", async () => {
    const servedStorePath = join(await mkdtemp(join(tmpdir(), 'farebox-exact-first-')), 'served-exact-payments.json');
    const svc = await world.publish('ex-first', '0.1', { exact: { settle: 'before-handler', servedStorePath } }, () => {
      throw new Error('the printer jammed');
    });
    const payer = await world.party(USDC);
    const { required, offer } = await exactQuote(svc.endpoint, {});
    const res = await post(svc.endpoint, {}, { [X402_HEADERS.paymentSignature]: await signedPayment(payer, offer, offer, required.resource) });
    expect(res.status).toBe(500);
    const receipt = decodePaymentResponseHeader(res.headers.get(X402_HEADERS.paymentResponseV2)!);
    expect(res.json).toEqual({
      error: 'the printer jammed',
      payment: {
        settled: true,
        transaction: receipt.transaction,
        network: 'stellar:testnet',
        payer: payer.publicKey,
        amount: '1000000',
        refunded: false,
        refund: "the automatic refund was refused (HTTP 404: not found): ask ex-first's owner for a refund",
      },
    });
    expect(world.usdcOf(payer.publicKey)).toBe(USDC - 1_000_000n);
  });
});
