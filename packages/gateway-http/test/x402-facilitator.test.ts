import { Keypair, TransactionBuilder } from '@stellar/stellar-sdk';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { SettleError, VerifyError, type PaymentPayload, type PaymentRequirements } from '@x402/core/types';
import { createGatewayClient } from '@farebox/client';
import { gatewayFacilitator, MemoryRateLimitStore } from '@farebox/gateway-core';
import { splitFee } from '@farebox/protocol';
import { createAccounts, keypairSigner, serviceMuxedId, TESTNET_PASSPHRASE } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startX402Stack, type X402Stack } from './x402-kit.js';

// The platform's x402 facilitator (issue 37, items 2 and 3): the stock @x402/core HTTPFacilitatorClient talks to
// /x402 on a gateway whose devnet runs under the testnet passphrase; payloads come from the stock @x402/stellar client.

const PRICE = 1_000_021n; // 0.1000021 USDC: 5 % is 50,001.05, so the split shows its rounding
let s: X402Stack;
let client: HTTPFacilitatorClient;
let service: string;
let owner: string;
beforeAll(async () => {
  // Two verifies and settles a payment: a payer may make 4 requests a minute here (the last test reaches it).
  s = await startX402Stack({ gateway: { x402: { payerPerMinute: 4 } } });
  client = new HTTPFacilitatorClient({ url: s.facilitatorUrl });
  service = `weather-${process.pid % 100_000}`;
  owner = await s.publishPrice(service, PRICE);
}, 60_000);
afterAll(async () => {
  await s?.close();
});

async function post(path: 'verify' | 'settle', payload: PaymentPayload, requirements: PaymentRequirements) {
  const res = await fetch(`${s.facilitatorUrl}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers };
}

describe('GET /x402/supported', () => {
  it('lists exact on stellar:testnet with sponsored fees, the treasury as signer, and Farebox’s payTo', async () => {
    const usdc = s.core.network.usdc.contractId;
    expect(await client.getSupported()).toEqual({
      // Farebox's rules in the kind's extra: a resource server can read them before its first customer.
      kinds: [
        {
          x402Version: 2,
          scheme: 'exact',
          network: 'stellar:testnet',
          extra: {
            areFeesSponsored: true,
            farebox: {
              treasury: s.treasury,
              payTo: 'the treasury muxed (M..., CAP-67) with the service\'s id: the first 8 bytes, big-endian, of SHA-256("farebox:service:" + extra.service)',
              asset: usdc,
              catalog: '/x402/discovery/resources',
              rules: [
                `payTo must be the platform treasury ${s.treasury} muxed with the id of the service paid (M...): this facilitator settles payments to Farebox services only, and what the payer signs names the service`,
                `asset must be the USDC token contract ${usdc}`,
                'extra.service must name a service of the Farebox catalog (GET /x402/discovery/resources)',
                "amount must be at least the service's price in the catalog (base units)",
                'paymentPayload.accepted must equal paymentRequirements, field by field',
              ],
            },
          },
        },
      ],
      // The bazaar catalog beside it (/x402/discovery/resources).
      extensions: ['bazaar'],
      // The treasury (never a settlement's source: a payload naming it is refused) and the channel accounts that send settlements.
      signers: { 'stellar:*': [s.treasury, ...s.core.x402.channels.addresses] },
    });
    // Farebox's field, read through the typed client (the answer is checked against the contract's schema).
    const supported = await createGatewayClient({ baseUrl: s.origin, fetch: s.fetch as typeof fetch }).request('x402Supported');
    expect(supported.farebox).toEqual({ payTo: s.treasury, network: 'stellar:testnet', asset: s.core.network.usdc.contractId });
  });
});

describe('an exact payment through the facilitator', () => {
  it('verifies, then settles the price from payer to treasury exactly (the payer’s XLM untouched), records the earning once, and the next batch pays the owner 95 %', async () => {
    const payer = await s.payer(5n * PRICE);
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    const before = { payer: await s.balances(payer.publicKey()), treasury: await s.balances(s.treasury), owner: await s.balances(owner) };

    expect(await client.verify(payload, req)).toEqual({ isValid: true, payer: payer.publicKey() });
    // Verifying moves nothing.
    expect(await s.balances(payer.publicKey())).toEqual(before.payer);

    const settled = await client.settle(payload, req);
    expect(settled).toMatchObject({ success: true, network: 'stellar:testnet', payer: payer.publicKey() });
    expect(settled.transaction).toMatch(/^[0-9a-f]{64}$/);
    expect(await s.balances(payer.publicKey())).toEqual({ usdc: before.payer.usdc - PRICE, xlm: before.payer.xlm });
    // A channel account sent it and paid its fee: the treasury's XLM is untouched.
    expect(await s.balances(s.treasury)).toEqual({ usdc: before.treasury.usdc + PRICE, xlm: before.treasury.xlm });

    // The earning: once, for the service's owner, with the amount the transaction moved.
    const ledger = s.core.ledger;
    const recorded = await ledger.exactPayment(settled.transaction);
    expect(recorded).toMatchObject({ amount: PRICE, service, publisherOwner: owner, payer: payer.publicKey(), payTo: s.treasury, network: 'stellar:testnet' });
    const split = splitFee(PRICE);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: PRICE, fee: split.fee, pending: split.net });

    // Replayed: the same payload again settles nothing, moves nothing and records nothing.
    const replay = await client.settle(payload, req);
    expect(replay).toMatchObject({ success: false, transaction: '' });
    expect(replay.errorReason).toMatch(/^invalid_exact_stellar_payload_/);
    expect((await s.balances(payer.publicKey())).usdc).toBe(before.payer.usdc - PRICE);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: PRICE });

    // The next settlement batch: the escrow pays the owner 95 % (the fee rounded down once), the treasury keeps 5 %.
    const engine = s.core.settlement.engine!;
    const cycle = (await engine.settleNow(owner))!;
    expect(cycle).toMatchObject({ state: 'done', calls: 1, gross: PRICE, fee: 50_001n, net: 950_020n, funded: PRICE });
    expect((await s.balances(owner)).usdc).toBe(before.owner.usdc + 950_020n);
    expect((await s.balances(s.treasury)).usdc).toBe(before.treasury.usdc + 50_001n);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: PRICE, fee: 50_001n, settled: 950_020n, pending: 0n });
    expect((await ledger.verify()).mismatches).toEqual([]);
  }, 60_000);

  it('is refused before anything moves for a wrong amount, another payee, an unknown service or less than the price', async () => {
    const payer = await s.payer(5n * PRICE);
    const start = await s.balances(payer.publicKey());
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    const cases: Array<[string, PaymentRequirements, string, string?]> = [
      [
        'tampered amount',
        { ...req, amount: String(PRICE + 1n) },
        'invalid_exact_stellar_payload_wrong_amount',
        `paymentPayload.accepted.amount is "${PRICE}", paymentRequirements.amount is "${PRICE + 1n}": a payment is settled only for the requirements it was made for`,
      ],
      [
        'another payee',
        { ...req, payTo: owner },
        'farebox_payee_not_treasury',
        `payTo must be ${req.payTo}, the platform treasury ${s.treasury} muxed with the id of ${service} (${serviceMuxedId(service)}): this facilitator settles payments to Farebox services only, to the address of the service paid`,
      ],
      // The treasury itself names no service: refused the same way.
      ['the bare treasury', { ...req, payTo: s.treasury }, 'farebox_payee_not_treasury'],
      [
        'unknown service',
        { ...req, extra: { areFeesSponsored: true, service: 'no-such-service' } },
        'farebox_unknown_service',
        'unknown service "no-such-service": extra.service must name a service in the catalog',
      ],
      ['no service', { ...req, extra: { areFeesSponsored: true } }, 'farebox_service_missing', 'extra.service must name the Farebox service being paid'],
      [
        'another asset',
        { ...req, asset: 'CAS3J7GYLGXMF6TDJBBYYSE3HQ6BBSMLNUQ34T6TZMYMW2EVH34XOWMA' },
        'farebox_wrong_asset',
        `asset must be the USDC token contract ${req.asset}`,
      ],
    ];
    for (const [what, requirements, reason, message] of cases) {
      const verified = await post('verify', payload, requirements);
      // Not 200: a stock resource server's HTTPFacilitatorClient then throws a VerifyError carrying reason and message.
      expect(verified, what).toMatchObject({
        status: 422,
        body: { isValid: false, invalidReason: reason, ...(message ? { invalidMessage: message, error: message } : {}) },
      });
      const settled = await post('settle', payload, requirements);
      expect(settled, what).toMatchObject({ status: 422, body: { success: false, errorReason: reason, transaction: '', network: 'stellar:testnet' } });
    }
    // A payload paying someone else than the treasury (built for the owner), offered as the treasury's.
    const elsewhere = await s.pay(payer, { ...req, payTo: owner });
    // What the payer accepted differs from the requirements: refused before the library sees it (422), and by the library when they agree.
    await expect(client.verify(elsewhere, req)).rejects.toMatchObject({ statusCode: 422, invalidReason: 'invalid_exact_stellar_payload_wrong_recipient' });
    expect(await client.verify({ ...elsewhere, accepted: req }, req)).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_exact_stellar_payload_wrong_recipient',
    });
    // Less than the service's price, even when payload and requirements agree.
    const cheap = s.requirements(service, PRICE - 1n);
    const cheapPayload = await s.pay(payer, cheap);
    expect((await post('verify', cheapPayload, cheap)).body).toMatchObject({
      isValid: false,
      invalidReason: 'farebox_amount_below_price',
      invalidMessage: `amount ${PRICE - 1n} is below the price of ${service} (${PRICE} base units)`,
    });
    // A malformed request: 400 in the same shape.
    const bad = await fetch(`${s.facilitatorUrl}/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"x402Version":1}' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_payload',
      error: 'x402Version must be 2 (exact on Stellar is x402 v2 only)',
    });
    const missing = JSON.stringify({ x402Version: 2, paymentPayload: payload });
    const unnamed = await fetch(`${s.facilitatorUrl}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: missing });
    expect({ status: unnamed.status, body: await unnamed.json() }).toEqual({
      status: 400,
      body: {
        success: false,
        errorReason: 'invalid_payload',
        errorMessage: 'paymentRequirements required',
        error: 'paymentRequirements required',
        transaction: '',
        network: 'stellar:testnet',
      },
    });
    // Nothing moved, nothing was recorded, no fee was counted.
    expect(await s.balances(payer.publicKey())).toEqual(start);
    expect(await s.core.ledger.publisherTotals(owner)).toMatchObject({ calls: 1 });
    expect(await s.core.ledger.sponsoredFees(payer.publicKey(), new Date().toISOString().slice(0, 10))).toEqual({ total: 0n, settles: 0 });
  }, 60_000);
});

describe('the bound on sponsored fees per payer and UTC day', () => {
  it('refuses a settle once reached, with nothing moved, and counts exactly under racing settles', async () => {
    const payer = await s.payer(10n * PRICE);
    const req = s.requirements(service, PRICE);
    const payloads = await Promise.all(Array.from({ length: 6 }, () => s.pay(payer, req)));
    const fee = BigInt(TransactionBuilder.fromXDR(payloads[0]!.payload.transaction as string, TESTNET_PASSPHRASE).fee);
    // Room for three settles today; the rate limits of this facilitator are out of the way.
    const facilitator = gatewayFacilitator(s.core, {
      settings: {
        payerDailyFeeStroops: 3n * fee,
        rateLimits: { ip: { name: 'x402-ip-race', limit: 1000, windowMs: 60_000 }, payer: { name: 'x402-payer-race', limit: 1000, windowMs: 60_000 } },
      },
      rateLimits: new MemoryRateLimitStore(),
    });
    const before = { payer: await s.balances(payer.publicKey()), treasury: (await s.balances(s.treasury)).usdc };
    const body = (p: PaymentPayload) => ({ x402Version: 2, paymentPayload: p, paymentRequirements: req });
    const answers = await Promise.all(payloads.map((p) => facilitator.settle(body(p), '127.0.0.1')));
    const won = answers.filter((a) => a.body.success === true);
    const refused = answers.filter((a) => a.body.success !== true);
    expect(won).toHaveLength(3);
    const message = `payer ${payer.publicKey()} reached today's bound on sponsored network fees (${3n * fee} stroops per UTC day); try again after 00:00 UTC`;
    for (const r of refused) {
      expect(r).toMatchObject({
        status: 429,
        rule: 'x402-payer-fees',
        body: { success: false, errorReason: 'farebox_fee_bound_reached', errorMessage: message, error: message, transaction: '' },
      });
      expect(Number(r.headers?.['Retry-After'])).toBeGreaterThan(0);
    }
    const day = new Date().toISOString().slice(0, 10);
    expect(await s.core.ledger.sponsoredFees(payer.publicKey(), day)).toEqual({ total: 3n * fee, settles: 3 });
    // Exactly three prices moved, the payer's XLM untouched; three earnings.
    expect(await s.balances(payer.publicKey())).toEqual({ usdc: before.payer.usdc - 3n * PRICE, xlm: before.payer.xlm });
    expect((await s.balances(s.treasury)).usdc).toBe(before.treasury + 3n * PRICE);
    for (const w of won) expect(await s.core.ledger.exactPayment(String(w.body.transaction))).toMatchObject({ amount: PRICE, feeCharged: fee });
  }, 60_000);
});

describe('rate limits', () => {
  it('answer 429 with Retry-After per payer over HTTP, and per IP', async () => {
    const payer = await s.payer(PRICE);
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    for (let i = 0; i < 4; i++) expect((await post('verify', payload, req)).body).toMatchObject({ isValid: true });
    const limited = await post('verify', payload, req);
    expect(limited).toMatchObject({ status: 429, body: { isValid: false, invalidReason: 'rate_limited', error: 'rate limit exceeded' } });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // The stock client sees the refusal as the library's errors, with the reason.
    await expect(client.verify(payload, req)).rejects.toMatchObject({ constructor: VerifyError, statusCode: 429, invalidReason: 'rate_limited' });
    await expect(client.settle(payload, req)).rejects.toMatchObject({ constructor: SettleError, statusCode: 429, errorReason: 'rate_limited' });

    const perIp = gatewayFacilitator(s.core, {
      settings: { rateLimits: { ip: { name: 'x402-ip-test', limit: 2, windowMs: 60_000 }, payer: { name: 'x402-payer-test', limit: 100, windowMs: 60_000 } } },
      rateLimits: new MemoryRateLimitStore(),
    });
    const body = { x402Version: 2, paymentPayload: payload, paymentRequirements: req };
    expect((await perIp.verify(body, '203.0.113.7')).status).toBe(200);
    expect((await perIp.verify(body, '203.0.113.7')).status).toBe(200);
    expect(await perIp.verify(body, '203.0.113.7')).toMatchObject({ status: 429, rule: 'x402-ip-test', body: { invalidReason: 'rate_limited' } });
    expect((await perIp.verify(body, '198.51.100.1')).status).toBe(200);
  }, 60_000);
});

describe('a dedicated fee account and the switch', () => {
  const open = { ip: { name: 'x402-ip-fee', limit: 1000, windowMs: 60_000 }, payer: { name: 'x402-payer-fee', limit: 1000, windowMs: 60_000 } };

  it('a fee account pays the fee in a fee bump: the treasury’s and the payer’s XLM untouched, the fee counted as charged', async () => {
    const feeAccount = Keypair.random();
    await s.devnet.friendbot(feeAccount.publicKey());
    const facilitator = gatewayFacilitator(s.core, {
      settings: { feeAccountSecret: feeAccount.secret(), rateLimits: open },
      rateLimits: new MemoryRateLimitStore(),
    });
    expect(facilitator.supported()).toMatchObject({ signers: { 'stellar:*': [s.treasury, ...s.core.x402.channels.addresses, feeAccount.publicKey()] } });
    const payer = await s.payer(PRICE);
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    const before = { payer: await s.balances(payer.publicKey()), treasury: await s.balances(s.treasury), fees: await s.balances(feeAccount.publicKey()) };
    const settled = await facilitator.settle({ x402Version: 2, paymentPayload: payload, paymentRequirements: req }, '127.0.0.1');
    expect(settled).toMatchObject({ status: 200, body: { success: true, payer: payer.publicKey() } });
    const recorded = (await s.core.ledger.exactPayment(String(settled.body.transaction)))!;
    expect(recorded).toMatchObject({ amount: PRICE, service });
    expect(recorded.feeCharged).toBeGreaterThan(0n);
    expect(await s.balances(feeAccount.publicKey())).toEqual({ usdc: 0n, xlm: before.fees.xlm - recorded.feeCharged });
    expect(await s.balances(s.treasury)).toEqual({ usdc: before.treasury.usdc + PRICE, xlm: before.treasury.xlm });
    expect(await s.balances(payer.publicKey())).toEqual({ usdc: 0n, xlm: before.payer.xlm });
    const day = new Date().toISOString().slice(0, 10);
    expect(await s.core.ledger.sponsoredFees(payer.publicKey(), day)).toEqual({ total: recorded.feeCharged, settles: 1 });
  }, 60_000);

  it('off, it lists no kinds and verify and settle answer 503 with the reason', async () => {
    const off = gatewayFacilitator(s.core, { settings: { enabled: false } });
    expect(off.supported()).toEqual({
      kinds: [],
      extensions: ['bazaar'],
      signers: {},
      farebox: { payTo: s.treasury, network: 'stellar:testnet', asset: s.core.network.usdc.contractId },
    });
    // Refused before the payload is read: any well-formed request gets the answer.
    const req = s.requirements(service, PRICE);
    const body = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: req, payload: { transaction: 'AAAA' } }, paymentRequirements: req };
    const message = 'the x402 facilitator is off on this gateway (FAREBOX_X402_FACILITATOR)';
    expect(await off.verify(body, '127.0.0.1')).toEqual({
      status: 503,
      body: { isValid: false, invalidReason: 'facilitator_unavailable', invalidMessage: message, error: message },
    });
    expect(await off.settle(body, '127.0.0.1')).toMatchObject({
      status: 503,
      body: { success: false, errorReason: 'facilitator_unavailable', error: message },
    });
  }, 60_000);
});

describe('the intent of a settlement, written before anything moves', () => {
  const open = { ip: { name: 'x402-ip-intent', limit: 1000, windowMs: 60_000 }, payer: { name: 'x402-payer-intent', limit: 1000, windowMs: 60_000 } };
  const intentOf = async (payer: string) => {
    const { rows } = await s.core.ledger.db.query<{ nonce: string }>('SELECT nonce FROM exact_intents WHERE payer = $1', [payer]);
    expect(rows).toHaveLength(1);
    return (await s.core.ledger.exactIntents.get(payer, rows[0]!.nonce))!;
  };
  const stopAt = (point: string) =>
    gatewayFacilitator(s.core, {
      settings: { rateLimits: open },
      rateLimits: new MemoryRateLimitStore(),
      crashPoint: (name) => {
        if (name === point) throw new Error(`stopped at ${point}`);
      },
    });

  it('a settlement refused by the network leaves no earning and closes its intent as failed; the same authorization settles later', async () => {
    const payer = await s.payer(PRICE);
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    // The payer's USDC leaves before the settle: the network refuses the transfer, nothing moves.
    await createAccounts(s.core.network).payUsdc(keypairSigner(payer.secret()), owner, PRICE);
    const totals = await s.core.ledger.publisherTotals(owner);
    const facilitator = gatewayFacilitator(s.core, { settings: { rateLimits: open }, rateLimits: new MemoryRateLimitStore() });
    const body = { x402Version: 2, paymentPayload: payload, paymentRequirements: req };
    const refused = await facilitator.settle(body, '127.0.0.1');
    expect(refused).toMatchObject({ status: 200, body: { success: false, transaction: '', errorReason: 'invalid_exact_stellar_payload_simulation_failed' } });
    expect(await intentOf(payer.publicKey())).toMatchObject({
      state: 'failed',
      txHash: null,
      amount: PRICE,
      service,
      error: 'invalid_exact_stellar_payload_simulation_failed',
    });
    expect(await s.core.ledger.publisherTotals(owner)).toEqual(totals);
    // Funded again, the same authorization settles: its intent opened again and closed with the transaction.
    await s.devnet.friendbot(payer.publicKey(), PRICE);
    const settled = await facilitator.settle(body, '127.0.0.1');
    expect(settled).toMatchObject({ status: 200, body: { success: true } });
    expect(await intentOf(payer.publicKey())).toMatchObject({ state: 'settled', txHash: settled.body.transaction, error: null });
    expect(await s.core.ledger.publisherTotals(owner)).toMatchObject({ calls: totals.calls + 1, gross: totals.gross + PRICE });
  }, 60_000);

  it('interrupted after the transfer, it is recorded once from the chain even by two reconcilers at once', async () => {
    const payer = await s.payer(PRICE);
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    const totals = await s.core.ledger.publisherTotals(owner);
    const treasury = (await s.balances(s.treasury)).usdc;
    await expect(stopAt('x402:settled').settle({ x402Version: 2, paymentPayload: payload, paymentRequirements: req }, '127.0.0.1')).rejects.toThrow(
      'stopped at x402:settled',
    );
    // The money is in the treasury, nothing is recorded: the intent is pending.
    expect((await s.balances(s.treasury)).usdc).toBe(treasury + PRICE);
    const intent = await intentOf(payer.publicKey());
    expect(intent).toMatchObject({ state: 'pending', amount: PRICE, service, publisherOwner: owner, payTo: s.treasury });
    expect(await s.core.ledger.publisherTotals(owner)).toEqual(totals);
    // A settle of the same authorization meanwhile is refused without sending anything.
    const again = await gatewayFacilitator(s.core, { settings: { rateLimits: open }, rateLimits: new MemoryRateLimitStore() }).settle(
      { x402Version: 2, paymentPayload: payload, paymentRequirements: req },
      '127.0.0.1',
    );
    expect(again.body).toMatchObject({ success: false, errorReason: 'farebox_settlement_in_progress', transaction: '' });

    const reconciler = s.core.x402.reconciler;
    const [a, b] = await Promise.all([reconciler.resolve(intent), reconciler.resolve(intent)]);
    expect([a, b].map((r) => r.state)).toEqual(['settled', 'settled']);
    expect([a, b].filter((r) => r.state === 'settled' && r.recorded)).toHaveLength(1);
    const txHash = a.state === 'settled' ? a.txHash : '';
    expect(txHash).toMatch(/^[0-9a-f]{64}$/);
    expect(await s.core.ledger.exactPayment(txHash)).toMatchObject({ amount: PRICE, payer: payer.publicKey(), service, publisherOwner: owner });
    expect(await intentOf(payer.publicKey())).toMatchObject({ state: 'settled', txHash });
    expect(await s.core.ledger.publisherTotals(owner)).toMatchObject({ calls: totals.calls + 1, gross: totals.gross + PRICE });
    // Once more: nothing new.
    expect(await reconciler.resolve(intent)).toMatchObject({ state: 'settled', txHash, recorded: false });
    expect((await s.core.ledger.verify()).mismatches).toEqual([]);
  }, 60_000);

  it('interrupted before anything was sent, it is closed as never settled once the authorization has expired', async () => {
    const payer = await s.payer(PRICE);
    // A short validity: the authorization expires a ledger or two later.
    const req = s.requirements(service, PRICE, { maxTimeoutSeconds: 5 });
    const payload = await s.pay(payer, req);
    await expect(stopAt('x402:intent').settle({ x402Version: 2, paymentPayload: payload, paymentRequirements: req }, '127.0.0.1')).rejects.toThrow(
      'stopped at x402:intent',
    );
    const intent = await intentOf(payer.publicKey());
    const reconciler = s.core.x402.reconciler;
    expect(await reconciler.resolve(intent)).toMatchObject({
      state: 'pending',
      reason: expect.stringMatching(/^no transfer yet; the authorization is valid until ledger/),
    });
    // Ledgers pass (each transaction closes one on this devnet).
    for (let i = 0; i <= intent.expirationLedger - intent.startLedger; i++) await s.devnet.friendbot(Keypair.random().publicKey());
    expect(await reconciler.resolve(intent)).toEqual({ state: 'never_settled', resolved: true });
    expect(await intentOf(payer.publicKey())).toMatchObject({ state: 'never_settled', txHash: null });
    expect((await s.balances(payer.publicKey())).usdc).toBe(PRICE);
    expect((await s.core.ledger.verify()).mismatches).toEqual([]);
  }, 60_000);
});
