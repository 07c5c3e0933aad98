// A gateway whose embedded devnet runs under the testnet passphrase (so x402 `exact` runs on stellar:testnet), an https
// proxy in front of its RPC for the stock client (which refuses plain http), funded accounts, @farebox/provider services
// paid through the platform's facilitator (<gateway>/x402), and the stock x402 client (x402-stock-client.mjs:
// @x402/fetch + @x402/stellar, unmodified) run in its own process.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Keypair } from '@stellar/stellar-sdk';
import { startGateway, type RunningGateway } from '@farebox/gateway';
import { formatAmount } from '@farebox/protocol';
import { createProvider, type ExactOptions, type ServiceHandler } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { eventually, httpsProxy, testTls, type HttpsProxy } from '@farebox/test-kit';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'x402-stock-client.mjs');

/** What x402-stock-client.mjs prints for `pay`. */
export interface StockPaid {
  status: number;
  body: any;
  paymentResponse: { success: boolean; transaction: string; network: string; payer?: string; errorReason?: string } | null;
  paymentSignature: string | null;
}

export interface X402World {
  gw: RunningGateway;
  treasury: string;
  chain: ReturnType<typeof createAccounts>;
  /** A new account with a USDC trustline and `usdc` base units. */
  account(usdc?: bigint): Promise<Keypair>;
  /** A registered service of `owner` priced `price` base units, paid with exact through the platform's facilitator; its endpoint. */
  publish(options: { service: string; price: bigint; owner: Keypair; handler: ServiceHandler; exact?: Omit<ExactOptions, 'servedStorePath'> }): Promise<string>;
  /** The stock client, in its own process, paying `endpoint` as `payer` (`pay`), or only signing the payment (`sign`). */
  stock(mode: 'pay', endpoint: string, payer: Keypair, body: unknown): Promise<StockPaid>;
  stock(mode: 'sign', endpoint: string, payer: Keypair, body: unknown, env?: Record<string, string>): Promise<{ header: string; offer: unknown }>;
  close(): Promise<void>;
}

/** `env`: more gateway variables (e.g. a short `FAREBOX_X402_REFUND_WINDOW`). */
export async function startX402World(prefix: string, options: { env?: Record<string, string> } = {}): Promise<X402World> {
  const dataDir = await mkdtemp(join(tmpdir(), `farebox-${prefix}-`));
  const gw = await startGateway({
    port: 0,
    network: 'local',
    env: { FAREBOX_DEVNET_PASSPHRASE: 'testnet', ...options.env },
    allowLoopbackEndpoints: true,
    dataDir,
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    logLevel: 'warn',
    // Batches run when the test asks (settleNow), not on a timer.
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
  });
  const closers: Array<() => Promise<void>> = [() => gw.close()];
  let proxy: HttpsProxy;
  try {
    proxy = await httpsProxy(gw.url);
  } catch (e) {
    await gw.close();
    throw e;
  }
  closers.unshift(() => proxy.close());
  const treasury = gw.core.treasuryAddress;
  const chain = createAccounts(gw.core.network);
  const registry = createRegistryClient(gw.core.network);
  // The gateway sets up the treasury's USDC trustline itself as it starts (a second trustline transaction meanwhile would race it: tx_bad_seq).
  await eventually('the gateway set up the treasury’s USDC trustline', async () => (await chain.balances(treasury)).usdc !== null, { timeoutMs: 60_000 });

  const world: X402World = {
    gw,
    treasury,
    chain,
    async account(usdc = 0n) {
      const kp = Keypair.random();
      await gw.devnet!.friendbot(kp.publicKey());
      await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
      if (usdc > 0n) await gw.devnet!.friendbot(kp.publicKey(), usdc);
      return kp;
    },
    async publish({ service, price, owner, handler, exact = {} }) {
      const provider = createProvider({
        service,
        pricePerCall: formatAmount(price, { trim: true }),
        description: `${service}, paid with x402 exact`,
        network: 'local',
        devnetUrl: gw.devnet!.url,
        devnetPassphrase: 'testnet',
        platform: { publicKey: gw.core.platformPublicKey, url: gw.url },
        wallet: { secret: owner.secret() },
        registry,
        exact: { ...exact, servedStorePath: join(dataDir, `${service}-served.json`) },
        env: {},
      }).serve(handler);
      const listening = await provider.listen(0, '127.0.0.1');
      closers.unshift(() => provider.close());
      const endpoint = `${listening.url}/`;
      await registry.register(keypairSigner(owner.secret()), { service, pricePerCall: price, endpoint, description: `${service}, paid with x402 exact` });
      await gw.core.mirror.syncOnce();
      return endpoint;
    },
    stock(mode: 'pay' | 'sign', endpoint: string, payer: Keypair, body: unknown, env: Record<string, string> = {}): Promise<any> {
      return new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          [SCRIPT, mode, endpoint, JSON.stringify(body)],
          {
            cwd: dirname(SCRIPT),
            env: {
              PATH: process.env.PATH ?? '',
              NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS ?? testTls().certPath,
              X402_SECRET: payer.secret(),
              X402_RPC_URL: `${proxy.url}/devnet/soroban/rpc`,
              ...env,
            },
            timeout: 30_000,
          },
          (error, stdout, stderr) => {
            if (error) reject(new Error(`x402-stock-client.mjs ${mode} failed: ${error.message}\n${stderr}`));
            else resolve(JSON.parse(stdout.trim().split('\n').at(-1)!));
          },
        );
      });
    },
    async close() {
      for (const close of closers) await close().catch(() => undefined);
    },
  };
  return world;
}
