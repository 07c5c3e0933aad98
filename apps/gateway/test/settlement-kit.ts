import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { createProvider, type ServiceHandler } from '@farebox/provider';
import { parseAmount } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { startGateway, type RunningGateway, type StartGatewayOptions } from '../src/index.js';
import { eventually } from '@farebox/test-kit';

/**
 * Settlement tests run the gateway against a devnet of their own (escrow API
 * rate limit off, instant ledgers) so that many escrow operations fit in a
 * few seconds; everything else is the real stack: gateway, PGlite or
 * PostgreSQL, provider-SDK services, the escrow provider API.
 */
export interface Stack {
  gw: RunningGateway;
  devnet: Devnet;
  url: string;
  request(path: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any }>;
  user(opts?: { topup?: number }): Promise<KitUser>;
  /** Publishes a provider-SDK service owned by its own keypair; it accepts platform-signed calls and escrow payments (the wallet path). */
  /** `devnetPassphrase: 'testnet'` on a devnet standing in for testnet: the service also offers x402 exact through the gateway's facilitator. */
  publish(
    name: string,
    price: string,
    handler?: ServiceHandler,
    opts?: { escrow?: boolean; devnetPassphrase?: string },
  ): Promise<{ owner: string; endpoint: string; secret: string }>;
  /** Provisions a user's wallet (friendbot + trustline) and gives it `usdc` devnet USDC. */
  fundWallet(user: KitUser, usdc: bigint): Promise<void>;
  /** Runs a provider-SDK service owned by `ownerWallet` (not registered: the dashboard registers it). */
  serve(name: string, price: string, ownerWallet: string): Promise<{ endpoint: string }>;
  usdc(address: string): Promise<bigint>;
  close(): Promise<void>;
}

export interface KitUser {
  id: string;
  key: string;
  /** The session cookie (for the OAuth consent screen). */
  cookie: string;
  wallet: string;
  api(path: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any }>;
}

let counter = 0;

export async function startDevnetForSettlement(): Promise<Devnet> {
  return startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false } });
}

export async function startStack(
  opts: { devnet?: Devnet; dataDir?: string; gateway?: StartGatewayOptions; env?: Record<string, string> } = {},
): Promise<Stack> {
  const devnet = opts.devnet ?? (await startDevnetForSettlement());
  const ownDevnet = !opts.devnet;
  const dataDir = opts.dataDir ?? (await mkdtemp(join(tmpdir(), 'farebox-settle-')));
  const gw = await startGateway({
    port: 0,
    // The devnet's local network, unless the test's environment names another.
    ...(opts.env?.STELLAR_NETWORK || opts.env?.FAREBOX_NETWORK ? {} : { network: 'local' as const }),
    // The test services listen on 127.0.0.1.
    allowLoopbackEndpoints: true,
    // Warnings and errors only: the tests read their answers, not the access log.
    logLevel: 'warn',
    dataDir,
    embedDevnet: false,
    devnetUrl: devnet.url,
    callTimeoutMs: 5000,
    rateLimits: { authPerMinute: 10_000, accountPerMinute: 100_000 },
    env: { FAREBOX_ESCROW_BUDGET: '100000/1000', ...opts.env },
    settlement: { settlementInterval: '1h', fundingInterval: '1h' },
    ...opts.gateway,
  });
  const registry = createRegistryClient(gw.core.network);
  const chain = createAccounts(gw.core.network);
  const closers: Array<() => Promise<void>> = [];

  async function request(path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const res = await fetch(`${gw.url}${path}`, {
      method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
      headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, body: body as any };
  }

  return {
    gw,
    devnet,
    url: gw.url,
    request,
    async user(o = {}) {
      const email = `s${Date.now()}_${process.pid}_${counter++}@example.com`;
      const res = await fetch(`${gw.url}/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'correct horse battery' }),
      });
      const signup = (await res.json()) as { id: string; csrf_token: string };
      if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${JSON.stringify(signup)}`);
      const cookie = (res.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
      const created = await request('/v1/api-keys', { body: { name: 'test' }, headers: { cookie, 'x-csrf-token': signup.csrf_token } });
      if (created.status !== 201) throw new Error(`key creation failed: ${created.status}`);
      const key = created.body.key as string;
      const api = (path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
        request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } });
      for (let left = o.topup ?? 0; left > 0; left -= 1000) {
        const t = await api('/v1/topup', { body: { amount: Math.min(1000, left) } });
        if (t.status !== 200) throw new Error(`topup failed: ${t.status} ${JSON.stringify(t.body)}`);
      }
      const me = await api('/v1/me');
      return { id: signup.id, key, cookie, wallet: me.body.custodial_wallet as string, api };
    },
    async publish(name, price, handler, opts = {}) {
      const kp = Keypair.random();
      await devnet.friendbot(kp.publicKey());
      const provider = createProvider({
        service: name,
        pricePerCall: price,
        description: `settlement test service ${name}`,
        network: 'local',
        devnetUrl: devnet.url,
        platform: { publicKey: gw.core.platformPublicKey, ...(opts.devnetPassphrase ? { url: gw.url } : {}) },
        ...(opts.devnetPassphrase ? { devnetPassphrase: opts.devnetPassphrase } : {}),
        wallet: { secret: kp.secret() },
        // Without the escrow provider the service is paid through the gateway only (its 402 offers nothing direct).
        ...(opts.escrow === false
          ? {}
          : {
              // The devnet's escrow API runs without its rate limit: the provider's client need not keep to the hosted 50 a minute.
              trustlessWork: { apiKey: 'farebox-test', platformAddress: gw.core.treasuryAddress, budget: { requests: 100_000, windowMs: 1000 } },
            }),
        servedStorePath: join(dataDir, `served-${name}.json`),
        registry,
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
        description: `settlement test service ${name}`,
      });
      await gw.core.mirror.syncOnce();
      return { owner: kp.publicKey(), endpoint, secret: kp.secret() };
    },
    async serve(name, price, ownerWallet) {
      const provider = createProvider({
        service: name,
        pricePerCall: price,
        description: `dashboard service ${name}`,
        network: 'local',
        devnetUrl: devnet.url,
        platform: { publicKey: gw.core.platformPublicKey },
        ownerWallet,
        registry,
        env: {},
      }).serve((payload) => ({ echo: payload }));
      const listening = await provider.listen(0, '127.0.0.1');
      closers.push(() => provider.close());
      return { endpoint: `${listening.url}/` };
    },
    async fundWallet(user, amount) {
      // The wallet is set up (friendbot + USDC trustline) by a background job from sign-up.
      await eventually(`the wallet ${user.wallet} is set up on chain`, async () => (await chain.balances(user.wallet)).usdc !== null, {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
      if (amount > 0n) await devnet.friendbot(user.wallet, amount);
    },
    async usdc(address) {
      return (await chain.balances(address)).usdc ?? 0n;
    },
    async close() {
      for (const c of closers) await c().catch(() => undefined);
      await gw.close();
      if (ownDevnet) await devnet.close();
    },
  };
}
