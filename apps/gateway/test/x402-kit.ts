import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { createAccounts, createRegistryClient, keypairSigner, servicePayTo } from '@farebox/stellar';
import { httpsProxy, type HttpsProxy } from '@farebox/test-kit';
import { startGateway, type RunningGateway, type StartGatewayOptions } from '../src/index.js';

/**
 * A gateway whose embedded devnet runs under the testnet passphrase (so its
 * network is `stellar:testnet` and the platform's facilitator serves), an
 * https proxy in front of it for the stock `@x402/stellar` client (which
 * refuses plain http), and helpers to publish services, fund payers and build
 * payment payloads exactly as a stock x402 client does.
 */
export interface X402Stack {
  gw: RunningGateway;
  /** The gateway's data directory (its keystore key): a second gateway on the same database shares it. */
  dataDir: string;
  /** The facilitator's base URL, as a provider configures it: `<gateway>/x402`. */
  facilitatorUrl: string;
  /** The devnet's RPC over https (what the stock client is given). */
  rpcUrl: string;
  treasury: string;
  /** Registers `name` at `price` base units, owned by a new account with a USDC trustline; returns the owner. */
  publish(name: string, price: bigint): Promise<string>;
  /** A new account with a USDC trustline holding `usdc` base units. */
  payer(usdc: bigint): Promise<Keypair>;
  /** The requirements a Farebox `exact` offer for `service` carries (payTo the treasury's muxed address for the service). */
  requirements(service: string, amount: bigint, over?: Partial<PaymentRequirements>): PaymentRequirements;
  /** A payment payload made by the stock client (`x402Client` + `ExactStellarScheme`) for `requirements`. */
  pay(payer: Keypair, requirements: PaymentRequirements): Promise<PaymentPayload>;
  balances(address: string): Promise<{ usdc: bigint; xlm: bigint }>;
  close(): Promise<void>;
}

export async function startX402Stack(gateway: StartGatewayOptions = {}): Promise<X402Stack> {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-x402-'));
  const gw = await startGateway({
    port: 0,
    network: 'local',
    stellar: { devnetPassphrase: 'testnet' },
    allowLoopbackEndpoints: true,
    dataDir,
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    logLevel: 'warn',
    rateLimits: { authPerMinute: 1000 },
    env: {},
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
    ...gateway,
  });
  const proxy: HttpsProxy = await httpsProxy(gw.url);
  const rpcUrl = `${proxy.url}/devnet/soroban/rpc`;
  const network = gw.core.network;
  const chain = createAccounts(network);
  const registry = createRegistryClient(network);
  // The treasury's trustline and some USDC (settlement funds escrows from it).
  await gw.core.settlement.ensureTreasuryFunds(1n);

  async function account(): Promise<Keypair> {
    const kp = Keypair.random();
    await gw.devnet!.friendbot(kp.publicKey());
    await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
    return kp;
  }

  return {
    gw,
    dataDir,
    facilitatorUrl: `${gw.url}/x402`,
    rpcUrl,
    treasury: gw.core.treasuryAddress,
    async publish(name, price) {
      const owner = await account();
      await registry.register(keypairSigner(owner.secret()), {
        service: name,
        pricePerCall: price,
        endpoint: `http://127.0.0.1:9/${name}`,
        description: `x402 test ${name}`,
      });
      await gw.core.mirror.syncOnce();
      return owner.publicKey();
    },
    async payer(usdc) {
      const kp = await account();
      if (usdc > 0n) await gw.devnet!.friendbot(kp.publicKey(), usdc);
      return kp;
    },
    requirements(service, amount, over = {}) {
      return {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset: network.usdc.contractId,
        amount: amount.toString(),
        payTo: servicePayTo(gw.core.treasuryAddress, service),
        maxTimeoutSeconds: 60,
        extra: { areFeesSponsored: true, service },
        ...over,
      };
    },
    async pay(payer, requirements) {
      const client = new x402Client().register('stellar:*', new ExactStellarScheme(createEd25519Signer(payer.secret(), 'stellar:testnet'), { url: rpcUrl }));
      return client.createPaymentPayload({
        x402Version: 2,
        resource: { url: 'https://service.example/call', description: 'a paid call', mimeType: 'application/json' },
        accepts: [requirements],
      });
    },
    async balances(address) {
      const b = await chain.balances(address);
      return { usdc: b.usdc ?? 0n, xlm: b.xlm };
    },
    async close() {
      await proxy.close();
      await gw.close();
    },
  };
}
