import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http';
import { HTTPFacilitatorClient, x402HTTPResourceServer, x402ResourceServer } from '@x402/core/server';
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme as ExactClient } from '@x402/stellar/exact/client';
import { ExactStellarScheme as ExactServer } from '@x402/stellar/exact/server';
import { createProvider } from '@farebox/provider';
import { parseAmount } from '@farebox/protocol';
import { createRegistryClient, keypairSigner, serviceMuxedId, servicePayTo } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startX402Stack, type X402Stack } from './x402-kit.js';

// Issue 46, items 5 and 6: a payment is bound to the service it was signed for (the treasury's muxed address for that
// service is the transfer's `to`), and a stock resource server pointed at /x402 learns Farebox's rules with their reason.

const PRICE = 100_000n;
let s: X402Stack;
let echo: string;
let wordCount: string;
const owners: Record<string, string> = {};
const servers: Server[] = [];
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  s = await startX402Stack();
  echo = `echo-${process.pid % 100_000}`;
  wordCount = `count-${process.pid % 100_000}`;
  owners[echo] = await s.publish(echo, PRICE);
  owners[wordCount] = await s.publish(wordCount, PRICE);
}, 60_000);
afterAll(async () => {
  for (const c of closers) await c();
  for (const server of servers) await new Promise((r) => server.close(r));
  await s?.close();
});

async function facilitator(path: 'verify' | 'settle', payload: PaymentPayload, requirements: PaymentRequirements) {
  const res = await fetch(`${s.facilitatorUrl}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

const earned = async (service: string) => (await s.gw.core.ledger.publisherTotals(owners[service]!)).calls;

describe('a payment is bound to the service it was signed for', () => {
  it('redirected: a payload signed for echo, settled as word-count’s, credits nothing; it still settles for echo', async () => {
    const payer = await s.payer(3n * PRICE);
    const start = await s.balances(payer.publicKey());
    const forEcho = s.requirements(echo, PRICE);
    const payload = await s.pay(payer, forEcho);
    const forCount = s.requirements(wordCount, PRICE);
    expect(forCount.payTo).not.toBe(forEcho.payTo);

    // As signed (accepted: echo's offer), with word-count's requirements: what the payer accepted is not what is settled.
    expect(await facilitator('settle', payload, forCount)).toMatchObject({
      status: 422,
      body: { success: false, errorReason: 'invalid_exact_stellar_payload_wrong_recipient', transaction: '' },
    });
    // `accepted` rewritten to word-count's offer (it is not signed): the transfer the payer signed pays echo's address.
    expect(await facilitator('settle', { ...payload, accepted: forCount }, forCount)).toMatchObject({
      status: 200,
      body: { success: false, errorReason: 'invalid_exact_stellar_payload_wrong_recipient', transaction: '' },
    });
    // Only the label changed (extra.service word-count, echo's payTo kept): that payTo is not word-count's address.
    const relabelled = { ...forEcho, extra: { areFeesSponsored: true, service: wordCount } };
    const refused = await facilitator('settle', { ...payload, accepted: relabelled }, relabelled);
    expect(refused).toMatchObject({ status: 422, body: { success: false, errorReason: 'farebox_payee_not_treasury' } });
    expect(String(refused.body.errorMessage)).toContain(`payTo must be ${forCount.payTo}`);
    // Stripped of its (unsigned) resource, it is still echo's payment.
    const { resource: _, ...stripped } = payload;
    expect(await facilitator('settle', { ...stripped, accepted: forCount } as PaymentPayload, forCount)).toMatchObject({
      body: { success: false, errorReason: 'invalid_exact_stellar_payload_wrong_recipient' },
    });
    expect(await s.balances(payer.publicKey())).toEqual(start);
    expect(await earned(wordCount)).toBe(0);

    // What it was signed for: echo, credited to echo's owner.
    expect(await facilitator('settle', payload, forEcho)).toMatchObject({ status: 200, body: { success: true } });
    expect(await earned(echo)).toBe(1);
    expect(await earned(wordCount)).toBe(0);
    expect((await s.balances(payer.publicKey())).usdc).toBe(start.usdc - PRICE);
  }, 60_000);

  it('a @farebox/provider refuses a payload without its resource, and one signed for another service', async () => {
    const kp = Keypair.random();
    await s.gw.devnet!.friendbot(kp.publicKey());
    const name = `count-p-${process.pid % 100_000}`;
    const provider = createProvider({
      service: name,
      pricePerCall: '0.01',
      description: 'counts words',
      network: 'local',
      devnetPassphrase: 'testnet',
      platform: { publicKey: s.gw.core.platformPublicKey, url: s.gw.url },
      wallet: { secret: kp.secret() },
      registry: createRegistryClient(s.gw.core.network),
      env: {},
    }).serve(() => ({ words: 2 }));
    const listening = await provider.listen(0, '127.0.0.1');
    closers.push(() => listening.close());
    const endpoint = `${listening.url}/`;
    await createRegistryClient(s.gw.core.network).register(keypairSigner(kp.secret()), {
      service: name,
      pricePerCall: parseAmount('0.01'),
      endpoint,
      description: 'counts words',
    });
    await s.gw.core.mirror.syncOnce();
    const quote = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const offer = decodePaymentRequiredHeader(quote.headers.get('payment-required')!).accepts.find((a) => a.scheme === 'exact')!;
    expect(offer.payTo).toBe(servicePayTo(s.treasury, name));

    const payer = await s.payer(3n * PRICE);
    const start = await s.balances(payer.publicKey());
    const send = (payload: unknown) =>
      fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'payment-signature': encodePaymentSignatureHeader(payload as PaymentPayload) },
        body: '{"text":"two words"}',
      });
    // Made for this service, its resource deleted.
    const { resource: _, ...stripped } = await s.pay(payer, offer);
    const bare = await send(stripped);
    expect(bare.status).toBe(402);
    expect(await bare.json()).toMatchObject({ error: 'invalid_payment_requirements', message: expect.stringContaining('the payment names no resource') });
    // Made for echo (same price), presented here with this resource.
    const other = await s.pay(payer, s.requirements(echo, 100_000n));
    const redirected = await send({ ...other, resource: { url: endpoint } });
    // The transfer it signed pays echo's address, not this service's.
    expect(await redirected.json()).toMatchObject({
      error: 'invalid_exact_stellar_payload_wrong_recipient',
      message: `the payment pays ${servicePayTo(s.treasury, echo)}, this service is paid to ${offer.payTo}`,
    });
    expect(await s.balances(payer.publicKey())).toEqual(start);
  }, 60_000);
});

/** A stock x402 resource server (@x402/core's x402HTTPResourceServer, what @x402/express wraps) on node:http, verifying and settling at /x402. */
async function stockServer(payTo: string, extra: Record<string, unknown>): Promise<string> {
  const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: s.facilitatorUrl })).register('stellar:testnet', new ExactServer());
  const http = new x402HTTPResourceServer(resourceServer, {
    'POST /forecast': {
      accepts: { scheme: 'exact', network: 'stellar:testnet', payTo, price: { amount: PRICE.toString(), asset: s.gw.core.network.usdc.contractId }, extra },
      description: 'a forecast',
      mimeType: 'application/json',
    },
  });
  // Starts fine: /x402/supported lists exact on stellar:testnet (with Farebox's rules in its extra).
  await http.initialize();
  const server = createServer((req, res) => {
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
    const context = { adapter, path: url.pathname, method: req.method ?? 'GET' };
    const reply = (status: number, headers: Record<string, string>, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    (async () => {
      const outcome = await http.processHTTPRequest(context);
      if (outcome.type === 'payment-error') return reply(outcome.response.status, outcome.response.headers, outcome.response.body ?? {});
      if (outcome.type !== 'payment-verified') return reply(500, {}, { error: 'the route should be paid' });
      const settled = await http.processSettlement(outcome.paymentPayload, outcome.paymentRequirements, outcome.declaredExtensions, { request: context });
      if (!settled.success) return reply(402, settled.headers, {});
      return reply(200, settled.headers, { forecast: 'sunny' });
    })().catch((e: unknown) => reply(500, {}, { error: String(e) }));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/forecast`;
}

/** A stock client (x402Client + @x402/stellar's ExactStellarScheme, as @x402/fetch drives them): the 402, the payment, the answer. */
async function stockCall(url: string, payer: Keypair): Promise<{ status: number; required?: PaymentRequired; body: unknown }> {
  const post = (headers: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"city":"Lima"}' });
  const first = await post();
  expect(first.status).toBe(402);
  const required = decodePaymentRequiredHeader(first.headers.get('payment-required')!);
  const client = new x402Client().register('stellar:*', new ExactClient(createEd25519Signer(payer.secret(), 'stellar:testnet'), { url: s.rpcUrl }));
  const payload = await client.createPaymentPayload(required);
  const paid = await post({ 'payment-signature': encodePaymentSignatureHeader(payload) });
  const header = paid.headers.get('payment-required');
  return { status: paid.status, ...(header ? { required: decodePaymentRequiredHeader(header) } : {}), body: await paid.json() };
}

describe('a stock resource server pointed at /x402', () => {
  it('offering its own payTo as echo’s sales: its first verify fails with the reason and its explanation, which its client sees; nothing moves', async () => {
    const seller = (await s.payer(0n)).publicKey();
    const url = await stockServer(seller, { service: echo });
    const payer = await s.payer(3n * PRICE);
    const start = await s.balances(payer.publicKey());
    const before = await earned(echo);
    const answer = await stockCall(url, payer);
    expect(answer.status).toBe(402);
    // Not a bare reason: the facilitator answers 422, HTTPFacilitatorClient throws a VerifyError with reason and message,
    // and the stock server puts its message in the 402's PAYMENT-REQUIRED `error`.
    expect(answer.required?.error).toBe(
      `farebox_payee_not_treasury: payTo must be ${servicePayTo(s.treasury, echo)}, the platform treasury ${s.treasury} muxed with the id of ${echo} (${serviceMuxedId(echo)}): this facilitator settles payments to Farebox services only, to the address of the service paid`,
    );
    expect(await s.balances(payer.publicKey())).toEqual(start);
    expect(await earned(echo)).toBe(before);
  }, 60_000);

  it('naming a service that is not in the catalog, or the bare treasury: the reason and its explanation reach the client', async () => {
    const payer = await s.payer(3n * PRICE);
    const unknown = await stockCall(await stockServer(servicePayTo(s.treasury, 'nowhere'), { service: 'nowhere' }), payer);
    expect(unknown.required?.error).toBe('farebox_unknown_service: unknown service "nowhere": extra.service must name a service in the catalog');
    const bare = await stockCall(await stockServer(s.treasury, { service: echo }), payer);
    expect(bare.required?.error).toMatch(/^farebox_payee_not_treasury: payTo must be M/);
  }, 60_000);

  it('naming echo’s own address (foreign-labelled): the payer signed a payment to echo, and only echo is credited', async () => {
    const url = await stockServer(servicePayTo(s.treasury, echo), { service: echo });
    const payer = await s.payer(3n * PRICE);
    const start = await s.balances(payer.publicKey());
    const before = { echo: await earned(echo), count: await earned(wordCount) };
    const answer = await stockCall(url, payer);
    expect(answer).toMatchObject({ status: 200, body: { forecast: 'sunny' } });
    expect((await s.balances(payer.publicKey())).usdc).toBe(start.usdc - PRICE);
    // The money went to the treasury's address for echo, so it is echo's earning; the server that sold it gets nothing.
    expect(await earned(echo)).toBe(before.echo + 1);
    expect(await earned(wordCount)).toBe(before.count);
  }, 60_000);
});
