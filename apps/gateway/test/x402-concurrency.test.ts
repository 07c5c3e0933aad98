import type { Keypair } from '@stellar/stellar-sdk';
import { HTTPFacilitatorClient } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { splitFee } from '@farebox/protocol';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startX402Stack, type X402Stack } from './x402-kit.js';

// Issue 46, items 2 and 3: treasury transactions that never collide, and no queue a crowd can fill. The devnet closes a
// ledger a second after a transaction is pending, as a real network does (not at once): every settlement waits for its
// ledger, and an authorization signed for 60 s lasts 12 ledgers. Payloads come from the stock @x402/stellar client and
// are settled through the stock HTTPFacilitatorClient.

const PRICE = 1_000_021n;
let s: X402Stack;
let client: HTTPFacilitatorClient;
let service: string;
let owner: string;

beforeAll(async () => {
  s = await startX402Stack({
    devnetCloseIntervalMs: 1000,
    // The bounds on requests and fees are not what is tested here.
    x402: { payerPerMinute: 10_000, ipPerMinute: 10_000, payerDailyFeeStroops: 100_000_000, dailyFeeStroops: 10_000_000_000 },
  });
  client = new HTTPFacilitatorClient({ url: s.facilitatorUrl });
  service = `busy-${process.pid % 100_000}`;
  owner = await s.publish(service, PRICE);
}, 120_000);
afterAll(async () => {
  await s?.close();
});

/** `n` payers, each holding `payments` prices and with one payment settled already (a payer the facilitator knows). */
async function payers(n: number, payments: number): Promise<Keypair[]> {
  const all = await Promise.all(Array.from({ length: n }, () => s.payer(BigInt(payments + 1) * PRICE)));
  const req = s.requirements(service, PRICE);
  const first = await Promise.all(all.map(async (p) => client.settle(await s.pay(p, req), req)));
  expect(first.filter((r) => !r.success)).toEqual([]);
  return all;
}

const settle = (payload: PaymentPayload, req: PaymentRequirements): Promise<SettleResponse> =>
  client.settle(payload, req).catch((err: unknown) => ({ success: false, errorReason: String(err), transaction: '', network: req.network }));

describe('30 concurrent exact payments during a settlement cycle', () => {
  it('all settle, none refused for a sequence number, and the cycles pay the owner exactly the net of every payment', async () => {
    const engine = s.gw.core.settlement.engine!;
    const before = { owner: (await s.balances(owner)).usdc, treasury: (await s.balances(s.treasury)).usdc };
    const crowd = await payers(10, 3);
    const req = s.requirements(service, PRICE);
    const payloads = await Promise.all(crowd.flatMap((p) => [0, 1, 2].map(() => s.pay(p, req))));
    expect(payloads).toHaveLength(30);

    // The owner's cycle (the 10 first payments) is settled on chain while the 30 settle: both send transactions.
    const [cycle, answers] = await Promise.all([engine.settleNow(owner), Promise.all(payloads.map((p) => settle(p, req)))]);
    expect(answers.filter((a) => !a.success)).toEqual([]);
    expect(new Set(answers.map((a) => a.transaction)).size).toBe(30);
    expect(cycle).toMatchObject({ state: 'done' });
    // What the first cycle did not claim, the next one does.
    const last = await engine.settleNow(owner);
    expect(last?.state ?? 'done').toBe('done');

    const cycles = (await s.gw.core.ledger.listCycles(owner, 10)).filter((c) => c.state === 'done' && c.calls > 0);
    const gross = cycles.reduce((sum, c) => sum + c.gross, 0n);
    const net = cycles.reduce((sum, c) => sum + splitFee(c.gross).net, 0n);
    expect(gross).toBe(40n * PRICE);
    for (const c of cycles) expect(c.funded).toBe(c.gross);
    // The owner got exactly the net of each cycle; the treasury kept exactly the fees of the 40 payments it received.
    expect((await s.balances(owner)).usdc).toBe(before.owner + net);
    expect((await s.balances(s.treasury)).usdc).toBe(before.treasury + 40n * PRICE - net);
    expect((await s.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 120_000);
});

describe('a crowd of settles', () => {
  it('does not stall an honest payment: signed just before a burst of 50 from other payers, it settles within its authorization', async () => {
    const crowd = await payers(10, 5);
    const honest = (await payers(1, 1))[0]!;
    const req = s.requirements(service, PRICE);
    const burst = await Promise.all(crowd.flatMap((p) => [0, 1, 2, 3, 4].map(() => s.pay(p, req))));
    const mine = await s.pay(honest, req);
    const start = { honest: (await s.balances(honest.publicKey())).usdc, treasury: (await s.balances(s.treasury)).usdc };

    const crowdAnswers = Promise.all(burst.map((p) => settle(p, req)));
    // The burst stands in line before the honest payment arrives.
    const channels = s.gw.core.x402.channels;
    await eventually('the burst queued', async () => channels.stats().waiting >= 20, { timeoutMs: 20_000 });
    const answer = await settle(mine, req);
    expect(answer).toMatchObject({ success: true, payer: honest.publicKey() });
    expect((await s.balances(honest.publicKey())).usdc).toBe(start.honest - PRICE);

    // The crowd's payments each settled or moved nothing: the treasury holds exactly the settled ones.
    const answers = await crowdAnswers;
    const settled = answers.filter((a) => a.success).length;
    expect(settled).toBeGreaterThan(0);
    for (const a of answers.filter((x) => !x.success)) expect(a.transaction).toBe('');
    expect((await s.balances(s.treasury)).usdc).toBe(start.treasury + BigInt(settled + 1) * PRICE);
    for (const a of answers.filter((x) => x.success)) expect(await s.gw.core.ledger.exactPayment(a.transaction)).toMatchObject({ amount: PRICE });
  }, 120_000);
});
