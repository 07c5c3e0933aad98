// Issue 48 item 1: a @farebox/provider service takes an MPP `charge` (draft-stellar-charge-00, pull mode, fees
// sponsored through the platform's facilitator), paid by a wire-level client written from the drafts in its own
// process (mpp-charge-client.mjs: mppx and the Stellar SDK only), with x402 `exact`'s guarantees: the payee is the
// treasury under the service's muxed address (the earning split 95/5 at settlement), settled only after the handler
// answered (a failed handler costs nothing), and a challenge of one service pays no other.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keypair } from '@stellar/stellar-sdk';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { createProvider } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner, servicePayTo } from '@farebox/stellar';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'mpp-charge-client.mjs');
const PRICE = 20_000n;
const tag = process.pid % 100_000;

let gw: RunningGateway;
let payer: Keypair;
let chain: ReturnType<typeof createAccounts>;
const endpoints: Record<string, string> = {};
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-mpp-charge-'));
  gw = await startGateway({
    port: 0,
    network: 'local',
    env: { FAREBOX_DEVNET_PASSPHRASE: 'testnet' },
    allowLoopbackEndpoints: true,
    dataDir,
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    logLevel: 'warn',
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
  });
  chain = createAccounts(gw.core.network);
  await eventually('the treasury’s USDC trustline', async () => (await chain.balances(gw.core.treasuryAddress)).usdc !== null, { timeoutMs: 20_000 });
  const account = async (usdc = 0n) => {
    const kp = Keypair.random();
    await gw.devnet!.friendbot(kp.publicKey());
    await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
    if (usdc > 0n) await gw.devnet!.friendbot(kp.publicKey(), usdc);
    return kp;
  };
  payer = await account(10n * PRICE);
  const registry = createRegistryClient(gw.core.network);
  for (const [name, handler] of [
    [`charge-echo-${tag}`, (p: unknown) => ({ echo: p })],
    [`charge-down-${tag}`, () => Promise.reject(new Error('the model is down'))],
  ] as const) {
    const owner = await account();
    const provider = createProvider({
      service: name,
      pricePerCall: '0.002',
      description: 'paid with an MPP charge',
      network: 'local',
      devnetUrl: gw.devnet!.url,
      devnetPassphrase: 'testnet',
      platform: { publicKey: gw.core.platformPublicKey, url: gw.url },
      wallet: { secret: owner.secret() },
      registry,
      exact: { servedStorePath: join(dataDir, `served-${name}.json`) },
      env: {},
    }).serve(handler);
    const listening = await provider.listen(0, '127.0.0.1');
    closers.push(() => provider.close());
    endpoints[name] = `${listening.url}/`;
    await registry.register(keypairSigner(owner.secret()), {
      service: name,
      pricePerCall: PRICE,
      endpoint: endpoints[name]!,
      description: 'paid with an MPP charge',
    });
  }
  await gw.core.mirror.syncOnce();
}, 90_000);

afterAll(async () => {
  for (const c of closers) await c().catch(() => undefined);
  await gw?.close();
});

/** The wire-level client in its own process. */
function client(mode: 'pay' | 'hash', endpoint: string, body: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [SCRIPT, mode, endpoint, JSON.stringify(body)],
      {
        cwd: dirname(SCRIPT),
        env: { PATH: process.env.PATH ?? '', MPP_SECRET: payer.secret(), MPP_RPC_URL: gw.core.network.rpcUrl, MPP_PASSPHRASE: gw.core.network.passphrase },
        timeout: 30_000,
      },
      (error, stdout, stderr) => (error ? reject(new Error(`mpp-charge-client.mjs failed: ${error.message}\n${stderr}`)) : resolve(JSON.parse(stdout.trim()))),
    );
  });
}

const usdc = async (a: string) => (await chain.balances(a)).usdc ?? 0n;

describe('MPP charge at a provider', () => {
  it('offers stellar/charge beside x402 and is paid by a client written from the drafts: a receipt, the price into the treasury, the earning recorded', async () => {
    const service = `charge-echo-${tag}`;
    const [payerBefore, treasuryBefore] = [await usdc(payer.publicKey()), await usdc(gw.core.treasuryAddress)];
    const r = await client('pay', endpoints[service]!, { hello: 'mpp' });
    expect(r.challenge.status).toBe(402);
    expect(r.challenge.request).toEqual({
      amount: '20000',
      currency: gw.core.network.usdc.contractId,
      recipient: servicePayTo(gw.core.treasuryAddress, service),
      methodDetails: { network: 'stellar:testnet', feePayer: true },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({ echo: { hello: 'mpp' } });
    expect(r.receipt).toMatchObject({ method: 'stellar', status: 'success' });
    expect(r.receipt.reference).toMatch(/^[0-9a-f]{64}$/);
    expect(await usdc(payer.publicKey())).toBe(payerBefore - PRICE);
    expect(await usdc(gw.core.treasuryAddress)).toBe(treasuryBefore + PRICE);
    expect(await gw.core.ledger.exactPayment(r.receipt.reference)).toMatchObject({ service, amount: PRICE });
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
