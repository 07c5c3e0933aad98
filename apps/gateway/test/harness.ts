import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { createProvider, type ProviderOptions, type ServiceHandler } from '@farebox/provider';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { parseAmount } from '@farebox/protocol';
import { createLogger } from '@farebox/gateway-core';
import { jsonRequest, type JsonRequestInit } from '@farebox/test-kit';
import { dropSchema } from '@farebox/test-kit/postgres';
import { fetchAdapter } from '@farebox/gateway-http';
import { tapResponse } from './contract-kit.js';
import { startGateway, type RunningGateway } from '../src/index.js';

export type DbKind = 'pglite' | 'postgres';

export interface Harness {
  gw: RunningGateway;
  url: string;
  /** `fetch` to the gateway in this process (its handler, no socket); a path is taken under `url`. Redirects are not followed. */
  fetch(input: string | URL | Request, init?: RequestInit): Promise<Response>;
  /** Signs up a new user and returns an API key for it plus its session cookie. */
  user(): Promise<TestUser>;
  /** Publishes a real provider-SDK service on the devnet registry (owned by its own keypair). */
  publish(
    name: string,
    opts: { price: string; handler?: ServiceHandler; priceFn?: ProviderOptions['priceFn']; pricingNote?: string },
  ): Promise<{ endpoint: string; owner: string; close(): Promise<void> }>;
  /** Runs a provider-SDK service owned by `ownerWallet` without registering it (the dashboard registers it). */
  serve(name: string, opts: { price: string; ownerWallet: string }): Promise<{ endpoint: string }>;
  /** Registers an arbitrary endpoint (not an SDK service) directly on the registry. */
  registerRaw(name: string, endpoint: string, price: string): Promise<{ owner: string }>;
  /** Every line the gateway logged so far (JSON). */
  logs(): readonly string[];
  /** Every secret the harness created: API keys, session and CSRF cookies, passwords. */
  secrets(): readonly string[];
  close(): Promise<void>;
}

export interface TestUser {
  id: string;
  email: string;
  key: string;
  cookie: string;
  csrf: string;
  /** fetch with the API key. */
  api(path: string, init?: { method?: string; body?: unknown; headers?: Record<string, string> }): Promise<{ status: number; body: any; headers: Headers }>;
}

let counter = 0;

/** The PostgreSQL server of the `.pg` suites. */
export const TEST_DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Drops a test's PostgreSQL schema (its tables, the gateway's and the ledger's), so runs leave nothing behind. */
export const dropTestSchema = (schema: string, databaseUrl = TEST_DATABASE_URL): Promise<void> => dropSchema(databaseUrl, schema);

export async function startHarness(kind: DbKind = 'pglite', extra: Parameters<typeof startGateway>[0] = {}): Promise<Harness> {
  const dataDir = await mkdtemp(join(tmpdir(), 'farebox-gw-'));
  const schema = kind === 'postgres' ? `gw_test_${process.pid}_${Date.now()}_${counter++}` : undefined;
  // A schema passed in (shared by two gateways, or kept across a restart) is its test's to drop.
  const ownSchema = schema !== undefined && extra.databaseSchema === undefined;
  const logLines: string[] = [];
  const secrets = new Set<string>(['correct horse battery']);
  const gw = await startGateway({
    port: 0,
    network: 'local',
    // The test services listen on 127.0.0.1.
    allowLoopbackEndpoints: true,
    dataDir,
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    // Short enough for the "never answers" test, long enough for a burst of
    // 200 calls while gateway, devnet, services and PGlite share this one
    // event loop (at 1.5 s a few of them timed out, now and then).
    callTimeoutMs: 4000,
    rateLimits: { authPerMinute: 1000 },
    env: {},
    // The access and call log, kept for the tests that read it (JSON lines).
    logger: createLogger({ level: 'info', destination: { write: (line: string) => void logLines.push(line) } }),
    ...(kind === 'postgres' ? { databaseUrl: TEST_DATABASE_URL, databaseSchema: schema } : {}),
    ...extra,
  });
  const registry = createRegistryClient(gw.core.network);
  const closers: Array<() => Promise<void>> = [];

  // The gateway's API in this process: requests go to its handler directly, not through a socket.
  const handler = fetchAdapter(gw.handler, { origin: gw.url });
  // The contract suites' recorders see these responses too (contract-kit.ts).
  const local = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await handler(input, init);
    tapResponse(input, init, res);
    return res;
  };
  const request = (path: string, init: JsonRequestInit = {}) => jsonRequest(local, path, init);

  async function owner() {
    const kp = Keypair.random();
    await gw.devnet!.friendbot(kp.publicKey());
    return kp;
  }

  return {
    gw,
    url: gw.url,
    fetch: local,
    logs: () => logLines,
    secrets: () => [...secrets],
    async user() {
      const email = `u${Date.now()}_${counter++}@example.com`;
      const signup = await request('/auth/signup', { body: { email, password: 'correct horse battery' } });
      if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${JSON.stringify(signup.body)}`);
      const cookie = (signup.headers.getSetCookie?.() ?? []).map((c) => c.split(';')[0]).join('; ');
      const csrf = signup.body.csrf_token as string;
      const created = await request('/v1/api-keys', { body: { name: 'test' }, headers: { cookie, 'x-csrf-token': csrf } });
      if (created.status !== 201) throw new Error(`key creation failed: ${created.status} ${JSON.stringify(created.body)}`);
      const key = created.body.key as string;
      for (const s of [key, csrf, ...cookie.split('; ').map((c) => c.slice(c.indexOf('=') + 1))]) secrets.add(s);
      return {
        id: signup.body.id,
        email,
        key,
        cookie,
        csrf,
        api: (path, init = {}) => request(path, { ...init, headers: { authorization: `Bearer ${key}`, ...init.headers } }),
      };
    },
    async publish(name, opts) {
      const kp = await owner();
      const provider = createProvider({
        service: name,
        pricePerCall: opts.price,
        ...(opts.priceFn ? { priceFn: opts.priceFn } : {}),
        ...(opts.pricingNote ? { pricingNote: opts.pricingNote } : {}),
        description: `test service ${name}`,
        network: 'local',
        platform: { publicKey: gw.core.platformPublicKey },
        wallet: { secret: kp.secret() },
        registry,
        // A gateway on a test's clock signs certificates at that clock's time: its services read the same one.
        ...(extra.now ? { now: extra.now } : {}),
        env: {},
      }).serve(opts.handler ?? ((payload) => ({ echo: payload })));
      const listening = await provider.listen(0, '127.0.0.1');
      const endpoint = `${listening.url}/`;
      await registry.register(keypairSigner(kp.secret()), {
        service: name,
        pricePerCall: parseAmount(opts.price),
        endpoint,
        description: `test service ${name}`,
      });
      await gw.core.mirror.syncOnce();
      const close = () => provider.close();
      closers.push(close);
      return { endpoint, owner: kp.publicKey(), close };
    },
    async serve(name, opts) {
      const provider = createProvider({
        service: name,
        pricePerCall: opts.price,
        description: `dashboard service ${name}`,
        network: 'local',
        platform: { publicKey: gw.core.platformPublicKey },
        ownerWallet: opts.ownerWallet,
        registry,
        ...(extra.now ? { now: extra.now } : {}),
        env: {},
      }).serve((payload) => ({ echo: payload }));
      const listening = await provider.listen(0, '127.0.0.1');
      closers.push(() => provider.close());
      return { endpoint: `${listening.url}/` };
    },
    async registerRaw(name, endpoint, price) {
      const kp = await owner();
      await registry.register(keypairSigner(kp.secret()), { service: name, pricePerCall: parseAmount(price), endpoint, description: `raw ${name}` });
      await gw.core.mirror.syncOnce();
      return { owner: kp.publicKey() };
    },
    async close() {
      for (const c of closers) await c().catch(() => undefined);
      await gw.close();
      if (ownSchema) await dropTestSchema(schema!);
    },
  };
}
