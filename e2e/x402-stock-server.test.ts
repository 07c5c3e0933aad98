// Issue 46, item 6, with code nobody here wrote: a stock @x402/express resource server (x402-stock-server.mjs, in its
// own process) pointed at the platform's facilitator starts fine, and the first customer of a server that breaks
// Farebox's rules sees the facilitator's reason and its explanation in the 402, not `402 {}`; nothing moves.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Keypair } from '@stellar/stellar-sdk';
import { servicePayTo } from '@farebox/stellar';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startX402World, type X402World } from './x402-kit.js';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'x402-stock-server.mjs');
const PRICE = 100_000n;
let w: X402World;
let payer: Keypair;
const children: ChildProcess[] = [];

beforeAll(async () => {
  w = await startX402World('x402-stock-server');
  payer = await w.account(10n * PRICE);
  await w.publish({ service: 'forecast', price: PRICE, owner: await w.account(), handler: () => ({ ok: true }) });
}, 120_000);

afterAll(async () => {
  for (const c of children) c.kill();
  await w?.close();
});

/** Starts the stock server with `env` and answers its URL. */
function stockServer(env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT], {
      cwd: dirname(SCRIPT),
      env: {
        PATH: process.env.PATH ?? '',
        X402_FACILITATOR_URL: `${w.gw.url}/x402`,
        X402_ASSET: w.gw.core.network.usdc.contractId,
        X402_AMOUNT: PRICE.toString(),
        ...env,
      },
    });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line) resolve((JSON.parse(line) as { url: string }).url);
    });
    child.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('exit', (code) => reject(new Error(`x402-stock-server.mjs exited ${code}: ${err}`)));
  });
}

it('a stock server naming no Farebox service: its customer is refused with the reason and what to do, and pays nothing', async () => {
  const url = await stockServer({ X402_PAY_TO: w.treasury });
  const before = await w.chain.balances(payer.publicKey());
  const paid = await w.stock('pay', `${url}/forecast`, payer, {});
  expect(paid.status).toBe(402);
  expect(paid.paymentResponse).toBeNull();
  expect((paid as unknown as { paymentRequired: { error: string } }).paymentRequired.error).toContain(
    'farebox_service_missing: extra.service must name the Farebox service being paid',
  );
  expect((await w.chain.balances(payer.publicKey())).usdc).toBe(before.usdc);
}, 60_000);

it("a stock server paying the bare treasury for a Farebox service: refused naming the service's own address", async () => {
  const url = await stockServer({ X402_PAY_TO: w.treasury, X402_SERVICE: 'forecast' });
  const paid = await w.stock('pay', `${url}/forecast`, payer, {});
  expect(paid.status).toBe(402);
  const error = (paid as unknown as { paymentRequired: { error: string } }).paymentRequired.error;
  expect(error).toContain('farebox_payee_not_treasury');
  expect(error).toContain(`payTo must be ${servicePayTo(w.treasury, 'forecast')}`);
}, 60_000);

it('the same server with the service’s own address is paid, once', async () => {
  const url = await stockServer({ X402_PAY_TO: servicePayTo(w.treasury, 'forecast'), X402_SERVICE: 'forecast' });
  const before = await w.chain.balances(payer.publicKey());
  const paid = await w.stock('pay', `${url}/forecast`, payer, {});
  expect(paid).toMatchObject({ status: 200, body: { forecast: 'sunny' }, paymentResponse: { success: true, network: 'stellar:testnet' } });
  expect((await w.chain.balances(payer.publicKey())).usdc).toBe(before.usdc! - PRICE);
}, 60_000);
