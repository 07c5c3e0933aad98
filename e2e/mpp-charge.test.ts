// Issue 48 item 1: a @farebox/provider service takes an MPP `charge` (draft-stellar-charge-00, pull mode, fees
// sponsored through the platform's facilitator), paid by a wire-level client written from the drafts in its own
// process (mpp-charge-client.mjs: mppx and the Stellar SDK only), with x402 `exact`'s guarantees: the payee is the
// treasury under the service's muxed address (the earning split 95/5 at settlement), settled only after the handler
// answered (a failed handler costs nothing), and a challenge of one service pays no other.
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Keypair } from '@stellar/stellar-sdk';
import { servicePayTo } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startX402World, type X402World } from './x402-kit.js';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'mpp-charge-client.mjs');
const PRICE = 20_000n;
const tag = process.pid % 100_000;

let world: X402World;
let payer: Keypair;
const endpoints: Record<string, string> = {};

beforeAll(async () => {
  // The x402 world: a gateway whose devnet runs under the testnet passphrase, services paid through its facilitator.
  world = await startX402World('mpp-charge');
  payer = await world.account(10n * PRICE);
  for (const [service, handler] of [
    [`charge-echo-${tag}`, (p: unknown) => ({ echo: p })],
    [`charge-down-${tag}`, () => Promise.reject(new Error('the model is down'))],
  ] as const)
    endpoints[service] = await world.publish({ service, price: PRICE, owner: await world.account(), handler });
}, 90_000);

afterAll(async () => {
  await world?.close();
});

/** The wire-level client in its own process. */
function client(mode: 'pay' | 'hash', endpoint: string, body: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [SCRIPT, mode, endpoint, JSON.stringify(body)],
      {
        cwd: dirname(SCRIPT),
        env: {
          PATH: process.env.PATH ?? '',
          MPP_SECRET: payer.secret(),
          MPP_RPC_URL: world.gw.core.network.rpcUrl,
          MPP_PASSPHRASE: world.gw.core.network.passphrase,
        },
        timeout: 30_000,
      },
      (error, stdout, stderr) => (error ? reject(new Error(`mpp-charge-client.mjs failed: ${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim()))),
    );
  });
}

const usdc = async (a: string) => (await world.chain.balances(a)).usdc ?? 0n;

describe('MPP charge at a provider', () => {
  it('offers stellar/charge beside x402 and is paid by a client written from the drafts: a receipt, the price into the treasury, the earning recorded', async () => {
    const service = `charge-echo-${tag}`;
    const [payerBefore, treasuryBefore] = [await usdc(payer.publicKey()), await usdc(world.gw.core.treasuryAddress)];
    const r = await client('pay', endpoints[service]!, { hello: 'mpp' });
    expect(r.challenge.status).toBe(402);
    expect(r.challenge.request).toEqual({
      amount: '20000',
      currency: world.gw.core.network.usdc.contractId,
      recipient: servicePayTo(world.gw.core.treasuryAddress, service),
      methodDetails: { network: 'stellar:testnet', feePayer: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ echo: { hello: 'mpp' } });
    expect(r.receipt).toMatchObject({ method: 'stellar', status: 'success' });
    expect(r.receipt.reference).toMatch(/^[0-9a-f]{64}$/);
    expect(await usdc(payer.publicKey())).toBe(payerBefore - PRICE);
    expect(await usdc(world.gw.core.treasuryAddress)).toBe(treasuryBefore + PRICE);
    expect(await world.gw.core.ledger.exactPayment(r.receipt.reference)).toMatchObject({ service, amount: PRICE });
  }, 60_000);

  it('charges nothing when the handler fails, and refuses push mode and another service’s challenge before anything moves', async () => {
    const before = await usdc(payer.publicKey());
    const failed = await client('pay', endpoints[`charge-down-${tag}`]!, { x: 1 });
    expect(failed.status).toBe(500);
    expect(String(failed.body.error)).toContain('nothing was charged');
    expect(failed.receipt).toBeNull();

    const push = await client('hash', endpoints[`charge-echo-${tag}`]!, { x: 2 });
    expect(push.status).toBe(402);
    expect(push.body.mpp).toMatchObject({ type: 'https://paymentauth.org/problems/verification-failed' });
    expect(String(push.body.mpp.detail)).toContain('push mode is not taken');

    // A challenge of charge-echo sent to charge-down: not this service's.
    const first = await fetch(endpoints[`charge-echo-${tag}`]!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const header = first.headers.get('www-authenticate')!;
    const { Challenge, Credential } = await import('mppx');
    const challenge = Challenge.deserialize(header);
    const other = await fetch(endpoints[`charge-down-${tag}`]!, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: Credential.serialize({ challenge, payload: { type: 'transaction', transaction: 'AAAA' } }),
      },
      body: '{}',
    });
    expect(other.status).toBe(402);
    expect(((await other.json()) as { mpp: { type: string } }).mpp.type).toBe('https://paymentauth.org/problems/invalid-challenge');
    expect(await usdc(payer.publicKey())).toBe(before);
  }, 60_000);
});
