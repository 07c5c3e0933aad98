import { HTTPFacilitatorClient } from '@x402/core/http';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { startPgServer, type PgServer } from './pg-server-kit.js';
import { startX402Stack, type X402Stack } from './x402-kit.js';

// Issue 46, item 2, across gateways: two gateways on one PostgreSQL database (one keystore, so one treasury and the same
// channel accounts) settle x402 payments and settlement cycles at the same time. Treasury transactions take turns
// through one advisory lock and each channel account serves one settlement at a time across both, so nothing is refused
// for a sequence number. Ledgers close a second after a transaction is pending, as on a real network.

const PRICE = 1_000_021n;
let pg: PgServer;
let s: X402Stack;
let b: RunningGateway;

beforeAll(async () => {
  pg = await startPgServer();
  const x402 = { payerPerMinute: 10_000, ipPerMinute: 10_000, payerDailyFeeStroops: 100_000_000, dailyFeeStroops: 10_000_000_000 };
  s = await startX402Stack({ databaseUrl: pg.url, devnetCloseIntervalMs: 1000, x402 });
  b = await startGateway({
    port: 0,
    network: 'local',
    stellar: { devnetPassphrase: 'testnet' },
    devnetUrl: `${s.gw.url}/devnet`,
    embedDevnet: false,
    allowLoopbackEndpoints: true,
    databaseUrl: pg.url,
    dataDir: s.dataDir,
    logLevel: 'warn',
    env: {},
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
    x402,
  });
}, 120_000);
afterAll(async () => {
  await b?.close();
  await s?.close();
  await pg?.close();
});

const settle = (url: string, payload: PaymentPayload, req: PaymentRequirements): Promise<SettleResponse> =>
  new HTTPFacilitatorClient({ url })
    .settle(payload, req)
    .catch((err: unknown) => ({ success: false, errorReason: String(err), transaction: '', network: req.network }));

describe('two gateways on one database', () => {
  it('settle 30 exact payments and two settlement cycles at once: every payment settles and each owner is paid exactly its net', async () => {
    expect(b.core.treasuryAddress).toBe(s.treasury);
    expect(b.core.x402.channels.addresses).toEqual(s.gw.core.x402.channels.addresses);
    const services = [`pg-busy-a-${process.pid % 100_000}`, `pg-busy-b-${process.pid % 100_000}`];
    const owners = await Promise.all(services.map((name) => s.publish(name, PRICE)));
    await b.core.mirror.syncOnce();
    const before = { owners: await Promise.all(owners.map(async (o) => (await s.balances(o)).usdc)), treasury: (await s.balances(s.treasury)).usdc };
    const reqs = services.map((name) => s.requirements(name, PRICE));
    const payers = await Promise.all(Array.from({ length: 10 }, () => s.payer(4n * PRICE)));
    // A first payment of each payer, to one service each: both owners have a cycle to settle.
    const first = await Promise.all(payers.map(async (p, i) => settle(s.facilitatorUrl, await s.pay(p, reqs[i % 2]!), reqs[i % 2]!)));
    expect(first.filter((r) => !r.success)).toEqual([]);

    // 30 more, half through each gateway, while gateway A settles one owner and gateway B the other.
    const payloads = await Promise.all(payers.flatMap((p, i) => [0, 1, 2].map(async () => ({ i, payload: await s.pay(p, reqs[i % 2]!) }))));
    const urls = [s.facilitatorUrl, `${b.url}/x402`];
    const [cycleA, cycleB, answers] = await Promise.all([
      s.gw.core.settlement.engine!.settleNow(owners[0]!),
      b.core.settlement.engine!.settleNow(owners[1]!),
      Promise.all(payloads.map(({ i, payload }, n) => settle(urls[n % 2]!, payload, reqs[i % 2]!))),
    ]);
    expect(answers.filter((a) => !a.success)).toEqual([]);
    expect(cycleA).toMatchObject({ state: 'done' });
    expect(cycleB).toMatchObject({ state: 'done' });
    for (const owner of owners) expect((await s.gw.core.settlement.engine!.settleNow(owner))?.state ?? 'done').toBe('done');

    // 40 payments of 20 per owner; each owner received exactly the net of its cycles, the treasury the rest.
    let paidOut = 0n;
    for (const [k, owner] of owners.entries()) {
      const cycles = (await s.gw.core.ledger.listCycles(owner, 10)).filter((c) => c.state === 'done' && c.calls > 0);
      expect(cycles.reduce((sum, c) => sum + c.gross, 0n)).toBe(20n * PRICE);
      const net = cycles.reduce((sum, c) => sum + splitFee(c.gross).net, 0n);
      expect((await s.balances(owner)).usdc).toBe(before.owners[k]! + net);
      paidOut += net;
    }
    expect((await s.balances(s.treasury)).usdc).toBe(before.treasury + 40n * PRICE - paidOut);
    expect((await s.gw.core.ledger.verify()).mismatches).toEqual([]);
  }, 180_000);
});
