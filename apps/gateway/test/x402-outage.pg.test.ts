import { gatewayFacilitator, MemoryRateLimitStore } from '@farebox/gateway-core';
import { splitFee } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPgServer, type PgServer } from './pg-server-kit.js';
import { startProxy, type TcpProxy } from './proxy-kit.js';
import { startX402Stack, type X402Stack } from './x402-kit.js';

// The platform facilitator's database goes away at the moment an `exact` payment is on chain and not yet recorded
// (PostgreSQL behind a TCP proxy the test cuts): the record is asked again through the outage, as a call's post is,
// and the payment is the service's earning once the database is back, in the same settle.

const PRICE = 1_000_021n;
let pg: PgServer;
let proxy: TcpProxy;
let s: X402Stack;

beforeAll(async () => {
  pg = await startPgServer();
  proxy = await startProxy({ port: pg.port });
  s = await startX402Stack({ databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/test` });
}, 120_000);
afterAll(async () => {
  await s?.close();
  await proxy?.stop();
  await pg?.close();
});

describe('a database outage between an exact settlement and its record', () => {
  it('is waited out: the settle answers success and the earning is recorded once, its intent closed', async () => {
    const service = `outage-weather-${process.pid % 100_000}`;
    const owner = await s.publish(service, PRICE);
    const payer = await s.payer(PRICE);
    const req = s.requirements(service, PRICE);
    const payload = await s.pay(payer, req);
    let cut = false;
    const facilitator = gatewayFacilitator(s.gw.core, {
      settings: {
        rateLimits: { ip: { name: 'x402-ip-outage', limit: 100, windowMs: 60_000 }, payer: { name: 'x402-payer-outage', limit: 100, windowMs: 60_000 } },
      },
      rateLimits: new MemoryRateLimitStore(),
      crashPoint(name) {
        if (name !== 'x402:settled') return;
        // The transfer is on chain: the database goes away now (every connection cut) and comes back 2 s later.
        cut = true;
        void proxy.stop();
        setTimeout(() => void proxy.start(), 2_000);
      },
    });
    const settled = await facilitator.settle({ x402Version: 2, paymentPayload: payload, paymentRequirements: req }, '127.0.0.1');
    expect(cut).toBe(true);
    expect(settled).toMatchObject({ status: 200, body: { success: true, payer: payer.publicKey() } });
    const txHash = String(settled.body.transaction);
    const ledger = s.gw.core.ledger;
    expect(await ledger.exactPayment(txHash)).toMatchObject({ amount: PRICE, service, publisherOwner: owner });
    const { rows } = await ledger.db.query<{ state: string; tx_hash: string }>('SELECT state, tx_hash FROM exact_intents WHERE payer = $1', [
      payer.publicKey(),
    ]);
    expect(rows).toEqual([{ state: 'settled', tx_hash: txHash }]);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: PRICE, pending: splitFee(PRICE).net });
  }, 60_000);
});
