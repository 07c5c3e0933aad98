import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { openDatabase, type Database } from '@farebox/ledger';
import { parseAmount } from '@farebox/protocol';
import { createProvider, type ServiceHandler } from '@farebox/provider';
import { createAccounts as createChainAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { eventually, testClock, type TestClock } from '@farebox/test-kit';
import { createGateway, createLogger, type CreateGatewayOptions, type GatewayCore, type Principal, type User } from '../src/index.js';

/**
 * gateway-core's own stack, in this process: `createGateway` on PGlite (in
 * memory) or PostgreSQL, the devnet on a loopback port (its Soroban RPC,
 * Horizon, friendbot and escrow API), provider-SDK services on loopback
 * ports, and a clock the test moves. No HTTP host: the tests call the core's
 * services as the host does.
 */
export interface CoreStack {
  core: GatewayCore;
  devnet: Devnet;
  clock: TestClock;
  /** A new account, signed up through the core, with an API key; `principal` is what the host hands the core for it. */
  user(opts?: { email?: string }): Promise<CoreUser>;
  /** A provider-SDK service (its own owner keypair, on the devnet's registry), on the test's clock; the mirror knows it when this resolves. `secret`: the owner key's (what signs a publisher link). */
  publish(name: string, price: string, handler?: ServiceHandler, opts?: { escrow?: boolean }): Promise<{ owner: string; endpoint: string; secret: string }>;
  /** A provider-SDK service owned by `ownerWallet` (an account's custodial wallet), on the test's clock, not registered: the account registers it through the API. */
  serve(name: string, price: string, ownerWallet: string): Promise<{ endpoint: string }>;
  /** An arbitrary endpoint registered on the registry (not an SDK service). */
  registerRaw(name: string, endpoint: string, price: string): Promise<{ owner: string }>;
  /** Waits for the account's wallet to be set up on chain (the sign-up job), then gives it `usdc` devnet USDC. */
  fundWallet(user: Pick<CoreUser, 'wallet'>, usdc: bigint): Promise<void>;
  /** USDC on chain, base units (0 without a trustline). */
  usdc(address: string): Promise<bigint>;
  /** The account's credits, base units. */
  credits(user: CoreUser): Promise<bigint>;
  close(): Promise<void>;
}

export interface CoreUser {
  user: User;
  principal: Principal;
  key: string;
  /** The sign-up's session token (a cookie, to the HTTP host). */
  session: string;
  wallet: string;
}

export interface CoreStackOptions {
  /** `pglite` (default, in memory) or `postgres` (DATABASE_URL, a schema of its own). */
  database?: 'pglite' | 'postgres';
  /** A devnet to share (else one of the stack's own). */
  devnet?: Devnet;
  /** Options for `createGateway`, over the stack's. */
  gateway?: CreateGatewayOptions;
}

let counter = 0;

export async function startCoreStack(opts: CoreStackOptions = {}): Promise<CoreStack> {
  const devnet = opts.devnet ?? (await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false } }));
  const clock = testClock();
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-core-'));
  let database: Database;
  if (opts.database === 'postgres') {
    database = await openDatabase({
      url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
      schema: `gwcore_${process.pid}_${Date.now()}_${counter++}`,
      poolSize: 4,
    });
  } else {
    database = await openDatabase({ dataDir: 'memory://' });
  }
  const core = await createGateway({
    network: 'local',
    devnetUrl: devnet.url,
    // No host listens: the port only keeps the gateway's own address out of the services it calls.
    port: 0,
    dataDir,
    database,
    // The test services listen on 127.0.0.1.
    allowLoopbackEndpoints: true,
    callTimeoutMs: 5_000,
    logger: createLogger({ level: 'silent' }),
    log: () => undefined,
    settlement: { settlementInterval: '1h', fundingInterval: '1h', escrowBudget: { requests: 100_000, windowMs: 1_000 } },
    now: clock.now,
    ...opts.gateway,
  });
  await core.start();
  const registry = createRegistryClient(core.network);
  const chain = createChainAccounts(core.network);
  const closers: Array<() => Promise<void>> = [];

  async function owner() {
    const kp = Keypair.random();
    await devnet.friendbot(kp.publicKey());
    return kp;
  }

  return {
    core,
    devnet,
    clock,
    async user(o = {}) {
      const email = o.email ?? `core${process.pid}_${Date.now()}_${counter++}@example.com`;
      const { user, session } = await core.accounts.signup({ email, password: 'correct horse battery' });
      const { key } = await core.accounts.createApiKey(user.id, { name: 'test' });
      const principal = await core.authenticateBearer(key);
      if (!principal) throw new Error('a new API key does not authenticate');
      return { user, principal, key, session: session.token, wallet: user.walletAddress };
    },
    async publish(name, price, handler, o = {}) {
      const kp = await owner();
      const provider = createProvider({
        service: name,
        pricePerCall: price,
        description: `core test service ${name}`,
        network: 'local',
        devnetUrl: devnet.url,
        platform: { publicKey: core.platformPublicKey },
        wallet: { secret: kp.secret() },
        // Without the escrow provider the service is paid through the gateway only.
        ...(o.escrow
          ? { trustlessWork: { apiKey: 'farebox-test', platformAddress: core.treasuryAddress }, servedStorePath: join(dataDir, `served-${name}.json`) }
          : {}),
        registry,
        // The service reads the test's clock too: certificates the gateway issues at a moved time are current for it.
        now: clock.now,
        env: {},
      }).serve(handler ?? ((payload) => ({ echo: payload })));
      const listening = await provider.listen(0, '127.0.0.1');
      closers.push(() => provider.close());
      const endpoint = `${listening.url}/`;
      await chain.ensureUsdcTrustline(keypairSigner(kp.secret()));
      await registry.register(keypairSigner(kp.secret()), {
        service: name,
        pricePerCall: parseAmount(price),
        endpoint,
        description: `core test service ${name}`,
      });
      await core.mirror.syncOnce();
      return { owner: kp.publicKey(), endpoint, secret: kp.secret() };
    },
    async serve(name, price, ownerWallet) {
      const provider = createProvider({
        service: name,
        pricePerCall: price,
        description: `core test service ${name}`,
        network: 'local',
        devnetUrl: devnet.url,
        platform: { publicKey: core.platformPublicKey },
        ownerWallet,
        registry,
        now: clock.now,
        env: {},
      }).serve((payload) => ({ echo: payload }));
      const listening = await provider.listen(0, '127.0.0.1');
      closers.push(() => provider.close());
      return { endpoint: `${listening.url}/` };
    },
    async registerRaw(name, endpoint, price) {
      const kp = await owner();
      await registry.register(keypairSigner(kp.secret()), { service: name, pricePerCall: parseAmount(price), endpoint, description: `raw ${name}` });
      await core.mirror.syncOnce();
      return { owner: kp.publicKey() };
    },
    async fundWallet(u, usdc) {
      // The wallet is set up (friendbot, USDC trustline) by the job sign-up starts.
      await eventually(`the wallet ${u.wallet} is set up on chain`, async () => (await chain.balances(u.wallet)).usdc !== null, {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      if (usdc > 0n) await devnet.friendbot(u.wallet, usdc);
    },
    async usdc(address) {
      return (await chain.balances(address)).usdc ?? 0n;
    },
    async credits(u) {
      return (await core.ledger.balance(u.user.id)).balance;
    },
    async close() {
      for (const c of closers) await c().catch(() => undefined);
      await core.close();
      await database.close();
      if (!opts.devnet) await devnet.close();
    },
  };
}

/** The claims of a `v1.<claims>.<signature>` (or v2) certificate header. */
export function certificateClaims(header: string | string[] | undefined): { iat: number; exp: number; cid: string; amt: string; svc: string } {
  const part = String(header).split('.')[1]!;
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { iat: number; exp: number; cid: string; amt: string; svc: string };
}
