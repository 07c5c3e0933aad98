import type { ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Address, Keypair, nativeToScVal, rpc, scValToNative } from '@stellar/stellar-sdk';
import { x402Client } from '@x402/core/client';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { splitFee } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner, resolveNetwork, serviceMuxedId, servicePayTo, TESTNET_PASSPHRASE } from '@farebox/stellar';
import { eventually, httpsProxy, type HttpsProxy } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../src/index.js';
import { freePort, spawnGateway } from './process-kit.js';

// The platform facilitator's gateway killed with SIGKILL between the moment an `exact` payment is on chain (the
// payer's USDC in the treasury) and the moment it is recorded as the service's earning: the restarted gateway's
// reconciler finds the transfer and records it once, and the next settlement batch pays the owner 95 %.

const PRICE = 1_000_021n;
const GRACE_MS = 120_000;
let devnet: Devnet;
let proxy: HttpsProxy;
let restarted: RunningGateway | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // The devnet stands in for testnet (the facilitator serves stellar:testnet), in this process: it outlives the gateway.
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', passphrase: 'testnet', escrow: { rateLimit: false } });
  proxy = await httpsProxy(devnet.url);
}, 30_000);
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await restarted?.close();
  await proxy?.close();
  await devnet?.close();
});

describe('a gateway killed between an exact settlement and its record', () => {
  it('records the earning once after the restart, from the chain, with the transaction that moved it; the next batch pays the owner 95 %', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-x402-crash-'));
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
    const first = spawnGateway(env, { crashAt: 'x402:settled' });
    children.push(first.child);
    const url = await first.started;
    const network = resolveNetwork({ network: 'local', devnetUrl: devnet.url, passphrase: TESTNET_PASSPHRASE, env: {} });
    expect(network.x402Network).toBe('stellar:testnet');
    const chain = createAccounts(network);
    const usdc = async (a: string) => (await chain.balances(a)).usdc ?? 0n;
    const { payTo: treasury } = ((await (await fetch(`${url}/x402/supported`)).json()) as { farebox: { payTo: string } }).farebox;
    await eventually('the gateway sets its treasury up on chain', async () => (await chain.balances(treasury)).usdc !== null);

    // A service, and a payer whose authorization the stock client signs.
    const account = async () => {
      const kp = Keypair.random();
      await devnet.friendbot(kp.publicKey());
      await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
      return kp;
    };
    const ownerKp = await account();
    const owner = ownerKp.publicKey();
    const service = `crash-weather-${process.pid % 100_000}`;
    await createRegistryClient(network).register(keypairSigner(ownerKp.secret()), {
      service,
      pricePerCall: PRICE,
      endpoint: `http://127.0.0.1:9/${service}`,
      description: 'x402 crash test',
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

    // The settle dies with the process once the transfer is on chain, before the record.
    const dying = await fetch(`${url}/x402/settle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: requirements }),
    }).catch((e: unknown) => e);
    expect(dying).toBeInstanceOf(Error);
    await first.exited;
    expect(await usdc(payer.publicKey())).toBe(before.payer - PRICE);
    expect(await usdc(treasury)).toBe(before.treasury + PRICE);

    // Restarted on the same data, its clock past the reconciler's grace (the time a restart takes, not waited out here).
    restarted = await startGateway({
      port: 0,
      network: 'local',
      devnetUrl: devnet.url,
      embedDevnet: false,
      stellar: { devnetPassphrase: 'testnet' },
      dataDir,
      logLevel: 'warn',
      env: { FAREBOX_ESCROW_BUDGET: '100000/1000' },
      settlement: { settlementInterval: '1h', fundingInterval: '1h' },
      now: () => Date.now() + GRACE_MS + 60_000,
    });
    const { ledger, metrics } = restarted.core;
    // The reconciler's pass at start records it.
    const txHash = await eventually('the reconciler records the payment', async () => {
      const { rows } = await ledger.db.query<{ tx_hash: string | null }>(`SELECT tx_hash FROM exact_intents WHERE payer = $1 AND state = 'settled'`, [
        payer.publicKey(),
      ]);
      return rows[0]?.tx_hash ?? undefined;
    });
    // The transaction recorded is the one that moved the price from the payer into the treasury: the token's only transfer from the payer.
    const server = new rpc.Server(network.rpcUrl, { allowHttp: true });
    const topics = [nativeToScVal('transfer', { type: 'symbol' }), Address.fromString(payer.publicKey()).toScVal()].map((v) => v.toXDR('base64'));
    const { events } = await server.getEvents({
      startLedger: 1,
      filters: [{ type: 'contract', contractIds: [network.usdc.contractId], topics: [[...topics, '*', '**']] }],
    });
    expect(events.map((e) => ({ txHash: e.txHash, to: Address.fromScVal(e.topic[2]!).toString(), amount: scValToNative(e.value) }))).toEqual([
      // Into the treasury, with the service's id (CAP-67: the muxed id in the event's data).
      { txHash, to: treasury, amount: { amount: PRICE, to_muxed_id: BigInt(serviceMuxedId(service)) } },
    ]);
    expect(await ledger.exactPayment(txHash)).toMatchObject({ amount: PRICE, payer: payer.publicKey(), service, publisherOwner: owner });
    const split = splitFee(PRICE);
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: PRICE, fee: split.fee, pending: split.net });
    expect(await metrics.registry.getSingleMetricAsString('farebox_x402_reconciled_total')).toContain('farebox_x402_reconciled_total{result="settled"} 1');
    // Another pass, another reconciler: nothing more.
    expect(await restarted.core.x402.reconciler.pass()).toEqual({ settled: 0, neverSettled: 0, pending: 0 });
    expect(await ledger.publisherTotals(owner)).toMatchObject({ calls: 1, gross: PRICE });

    // The next settlement batch: the owner gets 95 % (the fee rounded down once), the treasury keeps 5 %.
    const cycle = (await restarted.core.settlement.engine!.settleNow(owner))!;
    expect(cycle).toMatchObject({ state: 'done', calls: 1, gross: PRICE, fee: 50_001n, net: 950_020n });
    expect(await usdc(owner)).toBe(before.owner + 950_020n);
    expect(await usdc(treasury)).toBe(before.treasury + 50_001n);
    expect((await ledger.verify()).mismatches).toEqual([]);
  }, 120_000);
});
