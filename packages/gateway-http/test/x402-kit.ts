import { Keypair } from '@stellar/stellar-sdk';
import { x402Client } from '@x402/core/client';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { createEd25519Signer } from '@x402/stellar';
import { ExactStellarScheme } from '@x402/stellar/exact/client';
import { startDevnet } from '@farebox/devnet';
import { createAccounts, createRegistryClient, keypairSigner, servicePayTo } from '@farebox/stellar';
import { httpsProxy, type HttpsProxy } from '@farebox/test-kit';
import { startHttpStack, type HttpStack, type HttpStackOptions } from './kit.js';

/**
 * The kit's stack on a devnet under the testnet passphrase (so the gateway's
 * network is `stellar:testnet` and the platform's facilitator serves), the
 * handler on loopback node:http for the stock `HTTPFacilitatorClient`, an
 * https proxy in front of the devnet for the stock `@x402/stellar` client
 * (which refuses plain http), and helpers to publish services, fund payers and
 * build payment payloads exactly as a stock x402 client does.
 */
export interface X402Stack extends HttpStack {
  /** The facilitator's base URL, as a provider configures it: `<gateway>/x402` (the handler on loopback node:http). */
  facilitatorUrl: string;
  /** The devnet's RPC over https (what the stock client is given). */
  rpcUrl: string;
  treasury: string;
  /** Registers `name` at `price` base units, owned by a new account with a USDC trustline; returns the owner. */
  publishPrice(name: string, price: bigint): Promise<string>;
  /** A new account with a USDC trustline holding `usdc` base units. */
  payer(usdc: bigint): Promise<Keypair>;
  /** The requirements a Farebox `exact` offer for `service` carries (payTo the treasury's muxed address for the service). */
  requirements(service: string, amount: bigint, over?: Partial<PaymentRequirements>): PaymentRequirements;
  /** A payment payload made by the stock client (`x402Client` + `ExactStellarScheme`) for `requirements`. */
  pay(payer: Keypair, requirements: PaymentRequirements): Promise<PaymentPayload>;
  balances(address: string): Promise<{ usdc: bigint; xlm: bigint }>;
}

export async function startX402Stack(options: HttpStackOptions = {}): Promise<X402Stack> {
  const devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false }, passphrase: 'testnet' });
  const h = await startHttpStack({ ...options, devnet, gateway: { stellar: { devnetPassphrase: 'testnet' }, ...options.gateway } });
  const proxy: HttpsProxy = await httpsProxy(devnet.url);
  const network = h.core.network;
  const chain = createAccounts(network);
  const registry = createRegistryClient(network);
  // The treasury's trustline and some USDC (settlement funds escrows from it).
  await h.core.settlement.ensureTreasuryFunds(1n);
  const url = await h.listen();

  async function account(): Promise<Keypair> {
    const kp = Keypair.random();
    await devnet.friendbot(kp.publicKey());
    await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
    return kp;
  }

  return {
    ...h,
    facilitatorUrl: `${url}/x402`,
    rpcUrl: `${proxy.url}/soroban/rpc`,
    treasury: h.core.treasuryAddress,
    async publishPrice(name, price) {
      const owner = await account();
      await registry.register(keypairSigner(owner.secret()), {
        service: name,
        pricePerCall: price,
        endpoint: `http://127.0.0.1:9/${name}`,
        description: `x402 test ${name}`,
      });
      await h.core.mirror.syncOnce();
      return owner.publicKey();
    },
    async payer(usdc) {
      const kp = await account();
      if (usdc > 0n) await devnet.friendbot(kp.publicKey(), usdc);
      return kp;
    },
    requirements(service, amount, over = {}) {
      return {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset: network.usdc.contractId,
        amount: amount.toString(),
        payTo: servicePayTo(h.core.treasuryAddress, service),
        maxTimeoutSeconds: 60,
        extra: { areFeesSponsored: true, service },
        ...over,
      };
    },
    async pay(payer, requirements) {
      const client = new x402Client().register(
        'stellar:*',
        new ExactStellarScheme(createEd25519Signer(payer.secret(), 'stellar:testnet'), { url: `${proxy.url}/soroban/rpc` }),
      );
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
      await h.close();
      await devnet.close();
    },
  };
}
