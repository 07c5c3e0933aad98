import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { x402Client } from '@x402/core/client';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { exactRefundMessage } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner, resolveNetwork, servicePayTo, TESTNET_PASSPHRASE } from '@farebox/stellar';
import { eventually, httpsProxy, type HttpsProxy } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { freePort, spawnGateway } from './process-kit.js';

// The platform facilitator's gateway killed with SIGKILL in the middle of a refund of an `exact` payment (POST
// /x402/refund): after the ledger reversed the earning and wrote the refund's intent, before anything was signed
// (`x402:refund-intent`), and after the refund transaction was on chain, before the refund was closed
// (`x402:refund-submitted`). The restarted gateway's refund reconciler finishes it from the chain: the payer gets
// the amount back exactly once, the treasury ends where it began, and no batch pays the reversed earning.

const PRICE = 1_000_021n;
const AHEAD_MS = 5 * 60_000;
let devnet: Devnet;
let proxy: HttpsProxy;
const restarted: RunningGateway[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', passphrase: 'testnet', escrow: { rateLimit: false } });
  proxy = await httpsProxy(devnet.url);
}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  for (const g of restarted) await g.close();
  await proxy?.close();
  await devnet?.close();
});

describe('a gateway killed during a refund of an exact payment', () => {
  it.each([
    ['x402:refund-intent', 'before the refund transaction was signed'],
    ['x402:refund-submitted', 'after the refund transaction was on chain'],
  ])(
    '%s (%s): the restarted gateway finishes the refund once; payer and treasury back to the base unit, nothing paid out',
    async (point) => {
      const dataDir = await mkdtemp(join(tmpdir(), 'farebox-x402-refund-crash-'));
      const env = {
        PORT: String(await freePort()),
        FAREBOX_DATA_DIR: dataDir,
        STELLAR_NETWORK: 'local',
        FAREBOX_DEVNET_URL: devnet.url,
        FAREBOX_DEVNET_PASSPHRASE: 'testnet',
        FAREBOX_ESCROW_BUDGET: '100000/1000',
        FAREBOX_SETTLEMENT_INTERVAL: '1h',
        FAREBOX_FUNDING_INTERVAL: '1h',
        FAREBOX_LOG_LEVEL: 'warn',
      };
      const first = spawnGateway(env, { crashAt: point });
      children.push(first.child);
      const url = await first.started;
      const network = resolveNetwork({ network: 'local', devnetUrl: devnet.url, passphrase: TESTNET_PASSPHRASE, env: {} });
      const chain = createAccounts(network);
      const usdc = async (a: string) => (await chain.balances(a)).usdc ?? 0n;
      const { payTo: treasury } = ((await (await fetch(`${url}/x402/supported`)).json()) as { farebox: { payTo: string } }).farebox;
      await eventually('the gateway sets its treasury up on chain', async () => (await chain.balances(treasury)).usdc !== null);

      const account = async () => {
        const kp = Keypair.random();
        await devnet.friendbot(kp.publicKey());
        await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
        return kp;
      };
      const ownerKp = await account();
      const owner = ownerKp.publicKey();
      const service = `crash-refund-${process.pid % 10_000}-${point.endsWith('intent') ? 'i' : 's'}`;
      await createRegistryClient(network).register(keypairSigner(ownerKp.secret()), {
        service,
        pricePerCall: PRICE,
        endpoint: `http://127.0.0.1:9/${service}`,
        description: 'x402 refund crash test',
      });
      const payer = await account();
      await devnet.friendbot(payer.publicKey(), 3n * PRICE);
      const requirements = {
        scheme: 'exact',
        network: 'stellar:testnet' as const,
        asset: network.usdc.contractId,
        amount: PRICE.toString(),
        payTo: servicePayTo(treasury, service),
        maxTimeoutSeconds: 60,
        extra: { areFeesSponsored: true, service },
      };
      const client = new x402Client().register(
        'stellar:*',
        new ExactStellarScheme(createEd25519Signer(payer.secret(), 'stellar:testnet'), { url: network.rpcUrl.replace(devnet.url, proxy.url) }),
      );
      const payload = await client.createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://service.example/call', description: 'a paid call', mimeType: 'application/json' },
        accepts: [requirements],
      });
      const before = { payer: await usdc(payer.publicKey()), treasury: await usdc(treasury), owner: await usdc(owner) };

      // Settled (the service would have run its handler now, and failed).
      const settled = (await (
        await fetch(`${url}/x402/settle`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
        })
      ).json()) as { success: boolean; transaction: string };
      expect(settled.success).toBe(true);
      expect(await usdc(payer.publicKey())).toBe(before.payer - PRICE);

      // The owner asks for the refund; the gateway dies on the way.
      const timestamp = Date.now();
      const message = exactRefundMessage({ network: 'stellar:testnet', service, transaction: settled.transaction, timestamp });
      const dying = await fetch(`${url}/x402/refund`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ transaction: settled.transaction, service, timestamp, signature: ownerKp.sign(Buffer.from(message)).toString('base64') }),
      }).catch((e: unknown) => e);
      expect(dying).toBeInstanceOf(Error);
      await first.exited;
      // Before the transfer: the payer is still charged; after it: refunded already.
      expect(await usdc(payer.publicKey())).toBe(point === 'x402:refund-intent' ? before.payer - PRICE : before.payer);

      // Restarted on the same data, its clock past the refund reconciler's grace.
      const gw = await startGateway({
        port: 0,
        network: 'local',
        devnetUrl: devnet.url,
        embedDevnet: false,
        stellar: { devnetPassphrase: 'testnet' },
        dataDir,
        logLevel: 'error',
        env: { FAREBOX_ESCROW_BUDGET: '100000/1000' },
        settlement: { settlementInterval: '1h', fundingInterval: '1h' },
        now: () => Date.now() + AHEAD_MS,
      });
      restarted.push(gw);
      const { ledger } = gw.core;
      const refundTx = await eventually('the refund reconciler finishes the refund', async () => {
        const { rows } = await ledger.db.query<{ refund_tx_hash: string | null }>(
          `SELECT refund_tx_hash FROM exact_refunds WHERE payment_tx_hash = $1 AND state = 'refunded'`,
          [settled.transaction],
        );
        return rows[0]?.refund_tx_hash ?? undefined;
      });
      expect(refundTx).toMatch(/^[0-9a-f]{64}$/);
      // Once: the payer and the treasury exactly where they began; another pass sends nothing.
      expect(await gw.core.x402.refunds.pass()).toEqual({ refunded: 0, pending: 0 });
      expect(await usdc(payer.publicKey())).toBe(before.payer);
      expect(await usdc(treasury)).toBe(before.treasury);
      // The earning is reversed: nothing counted, no batch, nothing paid to the owner, no fee.
      expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 0, gross: 0n, fee: 0n, pending: 0n });
      expect(await gw.core.settlement.engine!.settleNow(owner)).toBeNull();
      expect(await usdc(owner)).toBe(before.owner);
      expect(await usdc(treasury)).toBe(before.treasury);
      expect((await ledger.verify()).mismatches).toEqual([]);
    },
    150_000,
  );
});
