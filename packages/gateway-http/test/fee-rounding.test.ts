import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Keypair } from '@stellar/stellar-sdk';
import { MIN_PRICE_BASE_UNITS, PLATFORM_FEE_BPS, splitFee, toUsd } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

const MIN_PRICE_ERROR = 'pricePerCallLamports must be at least 20 base units (0.000002 USDC), so that the 5 % platform fee of a call is at least one base unit';
const CALLS = 1_000;
/** Funding ticks during the cycle: each funds what the calls before it earned, in one batch. */
const WAVES = [250, 250, 300, 200];

let s: HttpStack;
let raw: Server;
beforeAll(async () => {
  // The kit's settlement runs once an hour: the test ticks and settles itself.
  s = await startHttpStack();
  // A service that answers every call (no SDK): a registration made on chain directly, before the minimum price, serves through it.
  raw = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
  });
  await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
}, 60_000);
afterAll(async () => {
  raw?.close();
  await s?.close();
});

/** `n` credit calls to `service`, 16 at a time, spread over `users`. */
async function calls(users: HttpAccount[], service: string, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < n) {
        const i = next++;
        const r = await users[i % users.length]!.api('/v1/call', { body: { service, payload: { i } } });
        if (r.status !== 200) throw new Error(`call ${i} to ${service} failed: ${r.status} ${JSON.stringify(r.body)}`);
      }
    }),
  );
}

/** 1,000 calls in funding waves, then the owner's cycle settled: returns what moved on chain. */
async function callAndSettle(users: HttpAccount[], service: string, owner: string) {
  const engine = s.core.settlement.engine!;
  await s.core.settlement.ensureTreasuryFunds(1_000n * 10_000_000n);
  const treasury = s.core.treasuryAddress;
  const before = { treasury: await s.usdc(treasury), owner: await s.usdc(owner) };
  for (const n of WAVES) {
    await calls(users, service, n);
    await engine.tick();
  }
  const cycle = (await engine.settleNow(owner))!;
  expect(cycle.state).toBe('done');
  const paid = (await s.usdc(owner)) - before.owner;
  const fee = cycle.funded - (before.treasury - (await s.usdc(treasury)));
  return { cycle, paid, fee };
}

/** The platform's share of a batch is 5 % of its gross, rounded down once: within one base unit of the exact 5 %. */
function expectFivePercent(gross: bigint, fee: bigint) {
  const exact = gross * PLATFORM_FEE_BPS; // x 10,000
  expect(exact - fee * 10_000n).toBeGreaterThanOrEqual(0n);
  expect(exact - fee * 10_000n).toBeLessThan(10_000n);
}

describe('the lowest price', () => {
  it('is 20 base units on registration and update through the API: 19 is refused with a clear 400 and nothing is written on chain', async () => {
    expect(MIN_PRICE_BASE_UNITS).toBe(20n);
    const pub = await s.account();
    expect((await pub.api('/v1/publisher/activate', { body: { name: 'Cheap Co' } })).status).toBe(200);
    const name = `cheap-${process.pid % 100000}`;
    const { endpoint } = await s.serve(name, '0.000002', pub.wallet);
    const registry = createRegistryClient(s.core.network);

    for (const price of [19, 1, 0, -20]) {
      const r = await pub.api('/v1/agents', { body: { service: name, pricePerCallLamports: price, endpoint, description: 'too cheap' } });
      expect(r, String(price)).toMatchObject({ status: 400, body: { error: MIN_PRICE_ERROR } });
    }
    expect(await registry.getAgent(name)).toBeNull();
    expect((await pub.api('/v1/agents/mine')).body).toEqual([]);

    const created = await pub.api('/v1/agents', { body: { service: name, pricePerCallLamports: 20, endpoint, description: 'cheapest' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ service: name, pricePerCallBaseUnits: 20 });
    const update = await pub.api(`/v1/agents/${name}`, { method: 'PUT', body: { pricePerCallLamports: 19 } });
    expect(update).toMatchObject({ status: 400, body: { error: MIN_PRICE_ERROR } });
    expect((await registry.getAgent(name))?.pricePerCall).toBe(20n);
  }, 60_000);
});

describe('the platform fee over 1,000 calls', () => {
  it('of a 21-base-unit service is 5 % of each batch within one base unit, and every publisher figure adds up to what was released', async () => {
    const pub = await s.account();
    expect((await pub.api('/v1/publisher/activate', { body: { name: 'Penny Co' } })).status).toBe(200);
    const name = `penny-${process.pid % 100000}`;
    const { endpoint } = await s.serve(name, '0.0000021', pub.wallet);
    expect(
      (await pub.api('/v1/agents', { body: { service: name, pricePerCallLamports: 21, endpoint, description: 'twenty-one base units a call' } })).status,
    ).toBe(201);
    const users = await Promise.all([s.account({ topup: 1 }), s.account({ topup: 1 })]);
    await s.fundWallet(pub, 0n);

    const { cycle, paid, fee } = await callAndSettle(users, name, pub.wallet);
    const gross = BigInt(CALLS) * 21n;
    // On chain: the escrow released the batch's gross, the fee once on it.
    expect(cycle).toMatchObject({ calls: CALLS, gross, funded: gross });
    expect(fee).toBe(1_050n); // per call, floored: 1,000
    expectFivePercent(gross, fee);
    expect(paid).toBe(gross - fee);

    // The books: the cycle's totals and every publisher endpoint say what was released.
    expect(cycle).toMatchObject({ fee, net: paid });
    const [batch] = (await pub.api('/v1/publisher/settlements')).body;
    expect(batch).toMatchObject({
      state: 'done',
      calls: CALLS,
      gross: { base_units: Number(gross) },
      fee: { pct: 5, base_units: Number(fee) },
      net: { base_units: Number(paid) },
      paid: { base_units: Number(paid) },
    });
    const overview = (await pub.api('/v1/publisher/overview')).body;
    expect(overview).toMatchObject({
      calls: CALLS,
      gross_base_units: Number(gross),
      fee_base_units: Number(fee),
      settled_base_units: Number(paid),
      pending_base_units: 0,
      earned_base_units: Number(paid),
    });
    expect(overview.services).toMatchObject([{ service: name, totalCalls: CALLS, totalEarned: toUsd(paid) }]);
    const days = (await pub.api('/v1/publisher/analytics?days=7')).body as Array<{ calls: number; earned_base_units: number }>;
    expect(days.reduce((n, d) => n + d.calls, 0)).toBe(CALLS);
    expect(days.reduce((n, d) => n + d.earned_base_units, 0)).toBe(Number(paid));
    expect((await s.core.ledger.verify()).ok).toBe(true);
  }, 300_000);

  it('of a 19-base-unit service registered on chain before the minimum is still 5 % of each batch, and its figures add up too', async () => {
    // Written to the registry contract directly (anyone can): the API would refuse 19.
    const owner = Keypair.random();
    await s.devnet.friendbot(owner.publicKey());
    await createAccounts(s.core.network).ensureUsdcTrustline(keypairSigner(owner.secret()));
    const name = `legacy-${process.pid % 100000}`;
    const endpoint = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`;
    await createRegistryClient(s.core.network).register(keypairSigner(owner.secret()), {
      service: name,
      pricePerCall: 19n,
      endpoint,
      description: 'priced before the minimum',
    });
    await s.core.mirror.syncOnce();
    const users = await Promise.all([s.account({ topup: 1 }), s.account({ topup: 1 })]);

    const { cycle, paid, fee } = await callAndSettle(users, name, owner.publicKey());
    const gross = BigInt(CALLS) * 19n;
    expect(cycle).toMatchObject({ calls: CALLS, gross, funded: gross });
    expect(fee).toBe(950n); // per call, floored: 0
    expectFivePercent(gross, fee);
    expect(paid).toBe(gross - fee);
    expect(cycle).toMatchObject({ fee, net: paid });
    // The publisher's figures (what /v1/publisher/overview and analytics read) add up to the release.
    const ledger = s.core.ledger;
    expect(await ledger.publisherTotals(owner.publicKey())).toMatchObject({ calls: CALLS, gross, fee, settled: paid, pending: 0n, earned: paid });
    expect((await ledger.publisherAnalytics(owner.publicKey(), 7)).reduce((n, d) => n + d.earned, 0n)).toBe(paid);
    expect(await ledger.serviceStats(owner.publicKey())).toEqual([{ service: name, calls: CALLS, gross, fee, earned: paid }]);
    expect(splitFee(gross)).toEqual({ amount: gross, fee, net: paid });
    expect((await ledger.verify()).ok).toBe(true);
  }, 300_000);
});
