// Money that moves on the settlement network, with createGateway in this
// process against the devnet: paid top-ups from the account's wallet, the
// wallet path (a call paid through an on-chain escrow, or the shortfall moved
// into credits), and settlement of publishers' earnings, now and once a cycle
// is older than the settlement interval by the gateway's clock.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { splitFee } from '@farebox/protocol';
import { eventually } from '@farebox/test-kit';
import { startCoreStack, type CoreStack, type CoreUser } from './core-kit.js';

const USDC = 10_000_000n;
/** 0.2500001 USDC: a price with a remainder in every split. */
const PRICE = 2_500_001n;

let s: CoreStack;
let service: string;
let owner: string;
beforeAll(async () => {
  // Top-ups are paid from the wallet here (as on testnet), and accounts start with no credits.
  s = await startCoreStack({ gateway: { freeTopups: false, signupCredit: 0 } });
  service = 'wallet-core';
  ({ owner } = await s.publish(service, '0.2500001', undefined, { escrow: true }));
}, 60_000);
afterAll(async () => {
  await s?.close();
});

/** What an account holds: its credits and its wallet's USDC. */
async function holdings(u: CoreUser) {
  return { credits: await s.credits(u), wallet: await s.usdc(u.wallet) };
}

describe('paid top-ups', () => {
  it('move the amount in USDC from the wallet to the treasury and credit exactly that, once per Idempotency-Key', async () => {
    expect(s.core.platform.key().topups).toBe('wallet');
    const u = await s.user();
    await s.fundWallet(u, 0n);
    const treasury0 = await s.usdc(s.core.treasuryAddress);
    await expect(s.core.account.topup(u.user, { amount: 5 })).rejects.toMatchObject({
      code: 'INSUFFICIENT_BALANCE',
      message: expect.stringContaining('insufficient USDC in your wallet: 0 USDC there, 5 needed'),
    });
    expect(await holdings(u)).toEqual({ credits: 0n, wallet: 0n });

    await s.devnet.friendbot(u.wallet, 10n * USDC);
    const paid = await s.core.account.topup(u.user, { amount: 3.5 }, 'paid-1');
    expect(paid).toMatchObject({ balance_base_units: 35_000_000, topup: { status: 'completed', paid_with: 'wallet', amount_base_units: 35_000_000 } });
    expect(paid.topup.tx_signature).toMatch(/^[0-9a-f]{64}$/);
    expect(await holdings(u)).toEqual({ credits: 35_000_000n, wallet: 10n * USDC - 35_000_000n });
    expect(await s.usdc(s.core.treasuryAddress)).toBe(treasury0 + 35_000_000n);

    // The same key again: the first answer, nothing moves; another amount under it: refused.
    expect(await s.core.account.topup(u.user, { amount: 3.5 }, 'paid-1')).toEqual(paid);
    await expect(s.core.account.topup(u.user, { amount: 4 }, 'paid-1')).rejects.toMatchObject({ code: 'CONFLICT' });
    // More than the wallet holds: refused, nothing moves.
    await expect(s.core.account.topup(u.user, { amount: 7 })).rejects.toMatchObject({
      code: 'INSUFFICIENT_BALANCE',
      message: expect.stringContaining('6.5 USDC there, 7 needed'),
    });
    expect(await holdings(u)).toEqual({ credits: 35_000_000n, wallet: 10n * USDC - 35_000_000n });
    expect(await s.usdc(s.core.treasuryAddress)).toBe(treasury0 + 35_000_000n);
    expect((await s.core.ledger.verify()).ok).toBe(true);
  });
});

describe('the wallet path', () => {
  it('pays a call from the wallet through an on-chain escrow when credits are empty: the wallet pays the price, the publisher gets the net', async () => {
    const u = await s.user();
    await s.fundWallet(u, USDC);
    const owner0 = await s.usdc(owner);
    const answer = await s.core.calls.call(u.principal, { service, payload: { hello: 'wallet' } });
    expect(answer.status, answer.json).toBe(200);
    expect(answer.value).toMatchObject({
      result: { echo: { hello: 'wallet' } },
      paidWith: 'wallet',
      mode: 'wallet-escrow',
      cost: { base_units: Number(PRICE) },
      newBalance: { base_units: 0 },
    });
    const steps = (answer.value as { trace: { steps: Array<{ name: string }> } }).trace.steps.map((x) => x.name);
    expect(steps).toEqual(expect.arrayContaining(['wallet_quote', 'wallet_deploy', 'wallet_fund', 'wallet_call']));
    expect(await holdings(u)).toEqual({ credits: 0n, wallet: USDC - PRICE });
    // The service releases the escrow after it answers: the publisher's net (the escrow keeps the 5 % fee).
    await eventually('the publisher is paid', async () => (await s.usdc(owner)) === owner0 + splitFee(PRICE).net);
  });

  it('refunds the escrow of a call the service fails to the wallet, and the error says so', async () => {
    await s.publish(
      'wallet-fails',
      '0.5',
      () => {
        throw new Error('upstream broke');
      },
      { escrow: true },
    );
    const u = await s.user();
    await s.fundWallet(u, USDC);
    const answer = await s.core.calls.call(u.principal, { service: 'wallet-fails', payload: {} });
    expect(answer.status).toBe(500);
    const body = answer.value as { error: string; escrowId?: string; trace: { steps: Array<{ name: string; status: string }> } };
    expect(body.escrowId).toMatch(/^C[A-Z2-7]{55}$/);
    // The payer's reason (without its way back: the gateway refunds the escrow itself), then what happened to the USDC.
    expect(body.error).toMatch(
      new RegExp(
        `^the service failed after escrow ${body.escrowId} was funded \\(HTTP 500\\): .+; the 0\\.5 USDC in escrow ${body.escrowId} was refunded to your wallet$`,
      ),
    );
    expect(body.error).not.toContain('farebox dispute');
    expect(body.trace.steps.find((x) => x.name === 'wallet_refund')).toMatchObject({ status: 'ok' });
    await eventually('the wallet has its USDC back', async () => (await holdings(u)).wallet === USDC);
    expect(await holdings(u)).toEqual({ credits: 0n, wallet: USDC });
  });

  it('moves only the shortfall from the wallet into credits when neither covers the price alone but both do, then pays with credits', async () => {
    const u = await s.user();
    await s.fundWallet(u, 3_500_000n);
    await s.core.account.topup(u.user, { amount: 0.15 });
    expect(await holdings(u)).toEqual({ credits: 1_500_000n, wallet: 2_000_000n });
    const treasury0 = await s.usdc(s.core.treasuryAddress);
    const answer = await s.core.calls.call(u.principal, { service, payload: { both: true } });
    expect(answer.status, answer.json).toBe(200);
    expect(answer.value).toMatchObject({ paidWith: 'credit', newBalance: { base_units: 0 } });
    const shortfall = PRICE - 1_500_000n;
    const topup = (answer.value as { trace: { steps: Array<{ name: string; detail?: Record<string, unknown> }> } }).trace.steps.find(
      (x) => x.name === 'wallet_topup',
    );
    expect(topup?.detail).toMatchObject({ amount: shortfall.toString(), from: u.wallet, to: s.core.treasuryAddress });
    expect(await holdings(u)).toEqual({ credits: 0n, wallet: 2_000_000n - shortfall });
    expect(await s.usdc(s.core.treasuryAddress)).toBe(treasury0 + shortfall);
  });

  it('answers insufficient balance when neither credits nor the wallet nor both cover the call, and nothing moves', async () => {
    const u = await s.user();
    await s.fundWallet(u, 2_000_000n);
    await s.core.account.topup(u.user, { amount: 0.04 });
    const before = { ...(await holdings(u)), transactions: s.devnet.stats().transactions };
    await expect(s.core.calls.call(u.principal, { service, payload: {} })).rejects.toMatchObject({
      code: 'INSUFFICIENT_BALANCE',
      message: 'insufficient balance',
    });
    expect({ ...(await holdings(u)), transactions: s.devnet.stats().transactions }).toEqual(before);
  });
});

describe('settlement', () => {
  /** A publisher's service and a caller with credits enough for `calls` calls at `price`. */
  async function earnings(name: string, price: string, calls: number) {
    const pub = await s.publish(name, price);
    const caller = await s.user();
    await s.fundWallet(caller, 10n * USDC);
    await s.core.account.topup(caller.user, { amount: 5 });
    for (let i = 0; i < calls; i++) expect((await s.core.calls.call(caller.principal, { service: name, payload: { i } })).status).toBe(200);
    return pub;
  }

  it('settles a publisher now: the escrow pays its wallet the net of the cycle, exactly, and the treasury keeps the fee', async () => {
    const pub = await earnings('settle-core', '0.0200001', 7);
    const gross = 7n * 200_001n;
    const { fee, net } = splitFee(gross);
    await s.core.settlement.ensureTreasuryFunds(gross);
    const before = { owner: await s.usdc(pub.owner), treasury: await s.usdc(s.core.treasuryAddress) };
    const result = await s.core.settlement.settle(pub.owner);
    expect(result.settlement).toMatchObject({
      state: 'done',
      calls: 7,
      fee: { pct: 5, base_units: Number(fee) },
      gross: { base_units: Number(gross) },
      net: { base_units: Number(net) },
      paid: { base_units: Number(net) },
      receiver: pub.owner,
    });
    expect(await s.usdc(pub.owner)).toBe(before.owner + net);
    expect(await s.usdc(s.core.treasuryAddress)).toBe(before.treasury - net);
    // Nothing new: nothing to settle, nothing moves.
    expect(await s.core.settlement.settle(pub.owner)).toMatchObject({ settled: false, settlement: null });
    expect(await s.usdc(pub.owner)).toBe(before.owner + net);
  });

  it('funds new earnings on each tick and releases a cycle once it is older than the settlement interval by the gateway’s clock', async () => {
    const engine = s.core.settlement.engine!;
    const pub = await earnings('interval-core', '0.0100001', 3);
    const gross = 3n * 100_001n;
    await s.core.settlement.ensureTreasuryFunds(gross);
    const owner0 = await s.usdc(pub.owner);
    await engine.tick();
    let [cycle] = await s.core.ledger.listCycles(pub.owner);
    // Funded, not released: the cycle is younger than the interval (1 h).
    expect(cycle).toMatchObject({ state: 'open', calls: 3, gross, funded: gross });
    expect(await s.usdc(pub.owner)).toBe(owner0);
    s.clock.advance(3_600_000);
    await engine.tick();
    [cycle] = await s.core.ledger.listCycles(pub.owner);
    expect(cycle).toMatchObject({ state: 'done', calls: 3, gross });
    expect(await s.usdc(pub.owner)).toBe(owner0 + splitFee(gross).net);
  });
});
