import { splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type KitUser, type Stack } from './settlement-kit.js';

const PRICES = ['0.0123457', '0.0031001', '0.0100003'] as const;
const UNITS = [123_457n, 31_001n, 100_003n];

let s: Stack;
beforeAll(async () => {
  s = await startStack({ gateway: { settlement: { settlementInterval: '1h', fundingInterval: '1h' } } });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

async function callMany(users: KitUser[], services: string[], counts: number[]): Promise<void> {
  const jobs: Array<[KitUser, string]> = [];
  services.forEach((svc, i) => {
    for (let k = 0; k < counts[i]!; k++) jobs.push([users[k % users.length]!, svc]);
  });
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < jobs.length) {
        const [u, svc] = jobs[next++]!;
        const r = await u.api('/v1/call', { body: { service: svc, payload: { n: next } } });
        if (r.status !== 200) throw new Error(`call failed: ${r.status} ${JSON.stringify(r.body)}`);
        expect(r.body.paidWith).toBe('credit');
      }
    }),
  );
}

describe('batched settlement', () => {
  it('settles 1000 credit calls over 3 publishers with one escrow per publisher per cycle, exact to the base unit, in transactions that grow with publishers and cycles, not calls', async () => {
    const engine = s.gw.core.settlement.engine!;
    const users = await Promise.all([s.user({ topup: 100 }), s.user({ topup: 100 }), s.user({ topup: 100 })]);
    const pubs = await Promise.all(PRICES.map((p, i) => s.publish(`settle-${i}-${process.pid % 10000}`, p)));
    const names = pubs.map((_, i) => `settle-${i}-${process.pid % 10000}`);
    const treasury = s.gw.core.treasuryAddress;
    // Local convenience: the devnet friendbot gives the treasury USDC (100,000 at a time); on testnet the operator funds it.
    await s.gw.core.settlement.ensureTreasuryFunds(1_000n * 10_000_000n);
    const before = { treasury: await s.usdc(treasury), pubs: await Promise.all(pubs.map((p) => s.usdc(p.owner))), txs: s.devnet.stats().transactions };

    // Cycle 1: 1000 calls in 4 waves; a funding tick after each wave funds that wave in one transaction per publisher.
    const counts = [400, 348, 252];
    for (let wave = 0; wave < 4; wave++) {
      await callMany(
        users,
        names,
        counts.map((c) => c / 4),
      );
      await engine.tick();
    }
    const afterFunding = s.devnet.stats().transactions;
    for (const p of pubs) await engine.settleNow(p.owner);
    const cycle1Txs = s.devnet.stats().transactions - before.txs;

    // Each publisher: exactly its net, computed on the cycle total by the escrow (fee = floor(gross x 5%)).
    let feeTotal = 0n;
    for (let i = 0; i < 3; i++) {
      const gross = UNITS[i]! * BigInt(counts[i]!);
      const { fee, net } = splitFee(gross);
      feeTotal += fee;
      expect(await s.usdc(pubs[i]!.owner)).toBe(before.pubs[i]! + net);
      const cycles = await s.gw.core.ledger.listCycles(pubs[i]!.owner);
      expect(cycles).toHaveLength(1);
      expect(cycles[0]).toMatchObject({ state: 'done', calls: counts[i], gross, funded: gross });
      expect(cycles[0]!.batches).toHaveLength(4);
    }
    const grossAll = UNITS.reduce((a, u, i) => a + u * BigInt(counts[i]!), 0n);
    // The treasury funded every gross and got the fees back: it is down by exactly the nets.
    expect(await s.usdc(treasury)).toBe(before.treasury - grossAll + feeTotal);

    // Cycle 2: a few calls for two publishers only.
    await callMany(users, names.slice(0, 2), [10, 5]);
    await engine.tick();
    for (const p of pubs) await engine.settleNow(p.owner);
    const cycle2Txs = s.devnet.stats().transactions - before.txs - cycle1Txs;

    // deploy + 4 funds + complete + approve + release per publisher in cycle 1; deploy + fund + 3 in cycle 2.
    console.log(
      `on-chain transactions: cycle 1 (1000 calls, 3 publishers) ${cycle1Txs}, cycle 2 (15 calls, 2 publishers) ${cycle2Txs}; funding during cycle 1: ${afterFunding - before.txs}`,
    );
    expect(cycle1Txs).toBe(3 * (1 + 4 + 3));
    expect(cycle2Txs).toBe(2 * (1 + 1 + 3));
    expect(cycle1Txs).toBeLessThan(1000 / 10);
  }, 240_000);
});

describe('POST /v1/publisher/settle and the views', () => {
  it('closes the caller’s cycle now, pays its wallet the net, and lists the batch with fee.pct, amounts and explorer links', async () => {
    const pub = await s.user();
    expect((await pub.api('/v1/publisher/activate', { body: { name: 'Settle Co' } })).status).toBe(200);
    const name = `dash-${process.pid % 100000}`;
    const { endpoint } = await s.serve(name, '0.0200001', pub.wallet);
    const reg = await pub.api('/v1/agents', { body: { service: name, pricePerCallLamports: 200_001, endpoint, description: 'dashboard service' } });
    expect(reg.status).toBe(201);
    const caller = await s.user();
    for (let i = 0; i < 7; i++) expect((await caller.api('/v1/call', { body: { service: name, payload: { i } } })).status).toBe(200);
    await s.gw.core.settlement.engine!.tick();
    const funded = await caller.api('/v1/transactions');
    expect(funded.body.filter((t: any) => t.type === 'call').every((t: any) => typeof t.explorer_url === 'string' && t.tx_signature)).toBe(true);
    const walletBefore = await s.usdc(pub.wallet);

    const settled = await pub.api('/v1/publisher/settle', { method: 'POST', body: {} });
    expect(settled.status).toBe(200);
    const gross = 7n * 200_001n;
    const { fee, net } = splitFee(gross);
    expect(settled.body.settlement).toMatchObject({
      state: 'done',
      calls: 7,
      fee: { pct: 5, base_units: Number(fee) },
      gross: { base_units: Number(gross) },
      net: { base_units: Number(net) },
      paid: { base_units: Number(net) },
      receiver: pub.wallet,
    });
    expect(settled.body.settlement.transactions.map((t: any) => t.step)).toEqual(['deploy', 'fund', 'complete', 'approve', 'release']);
    for (const t of settled.body.settlement.transactions) expect(t.explorer_url).toBe(`${s.devnet.url}/explorer/local/tx/${t.tx_hash}`);
    expect(await s.usdc(pub.wallet)).toBe(walletBefore + net);

    const list = await pub.api('/v1/publisher/settlements');
    expect(list.body).toHaveLength(1);
    expect(list.body[0].id).toBe(settled.body.settlement.id);
    const overview = await pub.api('/v1/publisher/overview');
    expect(overview.body).toMatchObject({ settled_base_units: Number(net), pending_base_units: 0, earned_base_units: Number(net) });

    // Nothing new: settling again says so and moves nothing.
    const again = await pub.api('/v1/publisher/settle', { method: 'POST', body: {} });
    expect(again.body).toMatchObject({ settled: false, settlement: null });
    expect(await s.usdc(pub.wallet)).toBe(walletBefore + net);
  }, 120_000);
});
