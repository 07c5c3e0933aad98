// The gateway's wallet path and a service that offers x402 `exact` into the treasury (a devnet standing in for
// testnet): the wallet pays it as a gateway call, moving the amount into credits in one transaction, not through a
// three-transaction escrow; the publisher's earning is recorded as for any call.
import { startDevnet } from '@farebox/devnet';
import { servicePayTo } from '@farebox/stellar';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack, type Stack } from './settlement-kit.js';

const PRICE = 2_500_001n; // 0.2500001 USDC

let s: Stack;
beforeAll(async () => {
  const devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false }, passphrase: 'testnet' });
  s = await startStack({ devnet, env: { FAREBOX_DEVNET_PASSPHRASE: 'testnet' } });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await s?.devnet.close();
});

it('pays a service offering exact into the treasury from the wallet by moving the amount into credits: one transaction, no escrow, the earning recorded', async () => {
  const service = `walx-${process.pid % 100000}`;
  const { endpoint, owner } = await s.publish(service, '0.2500001', undefined, { devnetPassphrase: 'testnet' });
  // The service's own quote offers exact (into the treasury) beside escrow.
  const quote = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(quote.status).toBe(402);
  // In the v2 PAYMENT-REQUIRED header: x402 v1 has no exact on Stellar, so the v1 body offers escrow only.
  const offers = (
    JSON.parse(Buffer.from(quote.headers.get('payment-required')!, 'base64').toString('utf8')) as { accepts: Array<{ scheme: string; payTo: string }> }
  ).accepts;
  expect(((await quote.json()) as { accepts: Array<{ scheme: string }> }).accepts.map((o) => o.scheme)).toEqual(['escrow']);
  expect(offers.map((o) => o.scheme).sort()).toEqual(['escrow', 'exact']);
  // The treasury's address for this service (the payer signs which service it pays).
  expect(offers.find((o) => o.scheme === 'exact')?.payTo).toBe(servicePayTo(s.gw.core.treasuryAddress, service));

  const user = await s.user();
  // No credits left: the sign-up credit is spent first on another service.
  const credits = BigInt((await user.api('/v1/balance')).body.balance_base_units);
  const drain = `walxd-${process.pid % 100000}`;
  await s.publish(drain, (Number(credits) / 1e7).toFixed(7));
  expect((await user.api('/v1/call', { body: { service: drain, payload: {} } })).status).toBe(200);
  await s.fundWallet(user, 5_000_000n);
  const contracts = s.devnet.chain.contracts.size;
  const treasuryBefore = await s.usdc(s.gw.core.treasuryAddress);

  const r = await user.api('/v1/call', { body: { service, payload: { hi: 1 } } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect(r.body).toMatchObject({ result: { echo: { hi: 1 } }, paidWith: 'credit', newBalance: { base_units: 0 } });
  expect(r.body.trace.steps.find((x: { name: string }) => x.name === 'wallet_topup').detail).toMatchObject({ amount: PRICE.toString() });
  expect(await s.usdc(user.wallet)).toBe(5_000_000n - PRICE);
  expect(await s.usdc(s.gw.core.treasuryAddress)).toBe(treasuryBefore + PRICE);
  // No escrow was deployed.
  expect(s.devnet.chain.contracts.size).toBe(contracts);
  const { rows } = await s.gw.core.ledger.db.query('SELECT gross FROM earnings WHERE publisher_owner = $1 AND service = $2', [owner, service]);
  expect(rows.map((e) => BigInt(e.gross as string))).toEqual([PRICE]);
  expect((await s.gw.core.ledger.verify()).mismatches).toEqual([]);
}, 120_000);
