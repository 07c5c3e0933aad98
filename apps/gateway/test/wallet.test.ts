import { Keypair } from '@stellar/stellar-sdk';
import { parseAmount, splitFee } from '@farebox/protocol';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NO_CONFIRMATIONS, rawClient } from './oauth-browser.js';
import type { TestUser } from './harness.js';
import { startStack, type Stack } from './settlement-kit.js';
import { eventually } from '@farebox/test-kit';

const PRICE = 2_500_001n; // 0.2500001 USDC

let s: Stack;
let service: string;
let owner: string;
beforeAll(async () => {
  s = await startStack();
  service = `wal-${process.pid % 100000}`;
  ({ owner } = await s.publish(service, '0.2500001'));
}, 60_000);
afterAll(async () => {
  await s?.close();
});

/** Spends the sign-up credit down to `left` base units with a cheap service. */
async function drainCredits(user: Awaited<ReturnType<Stack['user']>>, left: bigint) {
  const credits = BigInt((await user.api('/v1/balance')).body.balance_base_units);
  const name = `drain-${process.pid % 10000}-${Math.random().toString(36).slice(2, 7)}`;
  const price = credits - left;
  await s.publish(name, (Number(price) / 1e7).toFixed(7));
  const r = await user.api('/v1/call', { body: { service: name, payload: {} } });
  expect(r.status).toBe(200);
  expect(BigInt((await user.api('/v1/balance')).body.balance_base_units)).toBe(left);
}

describe('the wallet path', () => {
  it('pays from the wallet through the on-chain escrow when credits are empty, with an explorer link and each on-chain step in the trace', async () => {
    const user = await s.user();
    await drainCredits(user, 0n);
    await s.fundWallet(user, 10_000_000n);
    // GET /v1/wallet: the legacy lamports and sol twins carry base units, like base_units (the spec, Versioning rule 2).
    const wallet = await eventually('GET /v1/wallet shows the USDC', async () => {
      const body = (await user.api('/v1/wallet')).body;
      return body.base_units === 10_000_000 ? body : undefined;
    });
    expect(wallet).toMatchObject({ base_units: 10_000_000, lamports: 10_000_000, sol: 10_000_000, asset_amount: 1 });
    const ownerBefore = await s.usdc(owner);
    const r = await user.api('/v1/call', { body: { service, payload: { hello: 'wallet' } } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      result: { echo: { hello: 'wallet' } },
      paidWith: 'wallet',
      mode: 'wallet-escrow',
      cost: { base_units: Number(PRICE) },
      newBalance: { base_units: 0 },
    });
    expect(r.body.explorerUrl).toMatch(new RegExp(`^${s.devnet.url}/explorer/local/tx/[0-9a-f]{64}$`));
    const names = r.body.trace.steps.map((x: any) => x.name);
    expect(names).toEqual(expect.arrayContaining(['wallet_quote', 'wallet_deploy', 'wallet_fund', 'wallet_call']));
    for (const st of r.body.trace.steps.filter((x: any) => ['wallet_deploy', 'wallet_fund'].includes(x.name)))
      expect(st.detail.explorerUrl).toMatch(/\/tx\/[0-9a-f]{64}$/);
    // USDC really moved: the wallet paid the price, the publisher got the net of the escrow's 5% fee.
    expect(await s.usdc(user.wallet)).toBe(10_000_000n - PRICE);
    await eventually('the publisher is paid the net', async () => (await s.usdc(owner)) === ownerBefore + splitFee(PRICE).net);
    const txs = (await user.api('/v1/transactions')).body;
    expect(txs[0]).toMatchObject({ type: 'call', service, paid_with: 'wallet', status: 'completed', explorer_url: r.body.explorerUrl });
  }, 120_000);

  it('does not pay a service planted on the gateway itself (its own port on loopback): refused before anything is recorded, nothing moves, no account is made', async () => {
    const name = `self-${process.pid % 100000}`;
    const kp = Keypair.random();
    await s.devnet.friendbot(kp.publicKey());
    await createRegistryClient(s.gw.core.network).register(keypairSigner(kp.secret()), {
      service: name,
      pricePerCall: parseAmount('0.1'),
      endpoint: `http://127.0.0.1:${s.gw.port}/auth/signup`,
      description: 'the gateway itself',
    });
    await s.gw.core.mirror.syncOnce();
    const user = await s.user();
    await drainCredits(user, 0n);
    await s.fundWallet(user, 10_000_000n);
    const state = async () => ({
      wallet: await s.usdc(user.wallet),
      txs: s.devnet.stats().transactions,
      history: (await user.api('/v1/transactions')).body,
      accounts: (await user.api('/v1/platform/stats')).body.accounts,
    });
    const before = await state();
    const r = await user.api('/v1/call', { body: { service: name, payload: { email: 'planted@example.com', password: 'planted password' } } });
    expect(r).toMatchObject({ status: 500, body: { error: 'service endpoint refused: endpoint is the gateway itself; nothing was charged' } });
    expect(await state()).toEqual(before);
  }, 120_000);

  it('answers insufficient balance when neither credits nor wallet nor both together cover the call, and nothing moves', async () => {
    const user = await s.user();
    await drainCredits(user, 1_000_000n);
    await s.fundWallet(user, 1_000_000n);
    const before = { credits: (await user.api('/v1/balance')).body.balance_base_units, wallet: await s.usdc(user.wallet), txs: s.devnet.stats().transactions };
    const r = await user.api('/v1/call', { body: { service, payload: {} } });
    expect(r.status).toBe(402);
    expect(r.body).toEqual({ error: 'insufficient balance', code: 'INSUFFICIENT_BALANCE', callId: expect.stringMatching(/^call_/) });
    expect((await user.api('/v1/balance')).body.balance_base_units).toBe(before.credits);
    expect(await s.usdc(user.wallet)).toBe(before.wallet);
    expect(s.devnet.stats().transactions).toBe(before.txs);
  }, 120_000);

  it('moves only the shortfall from the wallet to credits on chain when neither covers alone but both together do, then pays with credits', async () => {
    const user = await s.user();
    await drainCredits(user, 1_500_000n);
    await s.fundWallet(user, 2_000_000n);
    const treasuryBefore = await s.usdc(s.gw.core.treasuryAddress);
    const r = await user.api('/v1/call', { body: { service, payload: { both: true } } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const shortfall = PRICE - 1_500_000n;
    expect(r.body).toMatchObject({ paidWith: 'credit', newBalance: { base_units: 0 } });
    const topup = r.body.trace.steps.find((x: any) => x.name === 'wallet_topup');
    expect(topup.detail).toMatchObject({ amount: shortfall.toString(), from: user.wallet, to: s.gw.core.treasuryAddress });
    expect(await s.usdc(user.wallet)).toBe(2_000_000n - shortfall);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasuryBefore + shortfall);
    const txs = (await user.api('/v1/transactions')).body;
    expect(txs.find((t: any) => t.type === 'topup' && t.tx_signature === topup.detail.txHash)).toMatchObject({
      amount_base_units: Number(shortfall),
      paid_with: 'wallet',
      explorer_url: topup.detail.explorerUrl,
    });
  }, 120_000);
  it('pays a service that takes no direct payment from a wallet that covers it by moving the shortfall into credits: no escrow, nothing locked', async () => {
    const user = await s.user();
    await drainCredits(user, 1_000_000n);
    await s.fundWallet(user, 5_000_000n);
    const platformOnly = `walp-${process.pid % 100000}`;
    await s.publish(platformOnly, '0.2500001', undefined, { escrow: false });
    const contracts = s.devnet.chain.contracts.size;
    const treasuryBefore = await s.usdc(s.gw.core.treasuryAddress);
    const r = await user.api('/v1/call', { body: { service: platformOnly, payload: { hi: 1 } } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ paidWith: 'credit', mode: 'platform-signed', newBalance: { base_units: 0 } });
    const shortfall = PRICE - 1_000_000n;
    expect(r.body.trace.steps.find((x: any) => x.name === 'wallet_topup').detail).toMatchObject({ amount: shortfall.toString() });
    expect(await s.usdc(user.wallet)).toBe(5_000_000n - shortfall);
    expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasuryBefore + shortfall);
    // No escrow was deployed for it.
    expect(s.devnet.chain.contracts.size).toBe(contracts);
    expect((await s.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 120_000);

  it("counts a wallet-path payment against an OAuth connection's daily limit: over the limit nothing moves", async () => {
    const user = await s.user();
    await drainCredits(user, 0n);
    await s.fundWallet(user, 10_000_000n);
    const oauth = await rawClient(s.url);
    const asBrowser = { cookie: user.cookie } as TestUser;
    const tight = await oauth.authorize(asBrowser, { dailyLimitUsd: '0.25', fields: NO_CONFIRMATIONS });
    const refused = await s.request('/v1/call', { body: { service, payload: {} }, headers: { authorization: `Bearer ${tight.tokens.access_token}` } });
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ limit_source: 'connection', limit_usd: 0.25, remaining_usd: 0.25 });
    expect(refused.body.error).toMatch(/^spending limit reached: this connection may spend \$0\.25 per day \(UTC\)/);
    expect(await s.usdc(user.wallet)).toBe(10_000_000n);
    // A connection whose limit covers the price pays from the wallet, and the spend is counted.
    const roomy = await oauth.authorize(asBrowser, { dailyLimitUsd: '0.5', fields: NO_CONFIRMATIONS });
    const paid = await s.request('/v1/call', { body: { service, payload: {} }, headers: { authorization: `Bearer ${roomy.tokens.access_token}` } });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body.paidWith).toBe('wallet');
    expect(await s.usdc(user.wallet)).toBe(10_000_000n - PRICE);
    const again = await s.request('/v1/call', { body: { service, payload: {} }, headers: { authorization: `Bearer ${roomy.tokens.access_token}` } });
    expect(again.status).toBe(402);
    // The wallet payment was spent from the connection's budget for the day.
    expect(again.body).toMatchObject({ limit_source: 'connection', limit_usd: 0.5, remaining_usd: 0.2499999 });
    expect(await s.usdc(user.wallet)).toBe(10_000_000n - PRICE);
  }, 120_000);
});
