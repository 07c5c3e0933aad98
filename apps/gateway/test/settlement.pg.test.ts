import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import type { Devnet } from '@farebox/devnet';
import { splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropTestSchema } from './harness.js';
import { startDevnetForSettlement, startStack, type Stack } from './settlement-kit.js';

const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `gw_settle_${process.pid}_${Date.now()}`;
const treasury = Keypair.random();

let devnet: Devnet;
let a: Stack;
let b: Stack;
beforeAll(async () => {
  devnet = await startDevnetForSettlement();
  // One platform: the same database, keystore (wallet provider) and treasury for both gateways.
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-settle-pg-'));
  const shared = {
    devnet,
    dataDir,
    env: { FAREBOX_TREASURY_SECRET: treasury.secret() },
    gateway: { databaseUrl, databaseSchema: schema, settlement: { settlementInterval: '1h', fundingInterval: '1h' } },
  };
  a = await startStack(shared);
  b = await startStack(shared);
}, 120_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await devnet?.close();
  await dropTestSchema(schema, databaseUrl);
});

describe('two gateways settling on one PostgreSQL database', () => {
  it('pay each cycle once: the publisher receives exactly the net and the treasury pays exactly that', async () => {
    expect(a.gw.core.treasuryAddress).toBe(b.gw.core.treasuryAddress);
    const name = `pg-settle-${process.pid % 100000}`;
    const { owner } = await a.publish(name, '0.0777777');
    await b.gw.core.mirror.syncOnce();
    await a.gw.core.settlement.ensureTreasuryFunds(1_000n * 10_000_000n);
    const users = [await a.user({ topup: 20 }), await b.user({ topup: 20 })];
    for (let i = 0; i < 40; i++) {
      const r = await users[i % 2]!.api('/v1/call', { body: { service: name, payload: { i } } });
      expect(r.status).toBe(200);
    }
    const before = { owner: await a.usdc(owner), treasury: await a.usdc(a.gw.core.treasuryAddress) };
    // Both settlers work at once, through ticks and settle-now, several times over.
    await Promise.all([
      a.gw.core.settlement.engine!.tick(),
      b.gw.core.settlement.engine!.tick(),
      a.gw.core.settlement.engine!.settleNow(owner),
      b.gw.core.settlement.engine!.settleNow(owner),
    ]);
    await Promise.all([a.gw.core.settlement.engine!.settleNow(owner), b.gw.core.settlement.engine!.settleNow(owner)]);
    const cycles = await a.gw.core.ledger.listCycles(owner);
    const done = cycles.filter((c) => c.state === 'done' && c.calls > 0);
    expect(done.reduce((n, c) => n + c.calls, 0)).toBe(40);
    const gross = done.map((c) => c.gross);
    const net = gross.reduce((sum, g) => sum + splitFee(g).net, 0n);
    expect(gross.reduce((x, y) => x + y, 0n)).toBe(40n * 777_777n);
    expect(await a.usdc(owner)).toBe(before.owner + net);
    expect(await a.usdc(a.gw.core.treasuryAddress)).toBe(before.treasury - net);
    // One escrow per cycle, each funded exactly by its confirmed batches.
    for (const c of done) expect(c.batches.filter((x) => x.state === 'confirmed').reduce((s, x) => s + x.amount, 0n)).toBe(c.gross);
  }, 180_000);
});
