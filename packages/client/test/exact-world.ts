// A devnet under the testnet passphrase (so `exact` runs on stellar:testnet),
// with the stock x402 facilitator (@x402/core's x402Facilitator with
// @x402/stellar's ExactStellarScheme) served on loopback under /x402, as the
// platform's facilitator is: POST /x402/verify, /x402/settle, GET /x402/supported
// (with Farebox's `farebox: { payTo, network }`).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { parseAmount } from '@farebox/protocol';
import { createProvider, type ProviderOptions, type ServiceHandler } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { x402Facilitator } from '@x402/core/facilitator';
import { createEd25519Signer } from '@x402/stellar';
import { MuxedExactStellarScheme } from '@farebox/provider';
import { afterAll, beforeAll } from 'vitest';
import { createClient, type ClientOptions } from '../src/index.js';
import { newSecret, type Party } from './helpers.js';

export interface ExactWorld {
  devnet: Devnet;
  treasury: Party;
  /** The loopback platform: `<url>/x402` is the stock facilitator. */
  platformUrl: string;
  party(usdc?: bigint): Promise<Party>;
  usdcOf(address: string): bigint;
  client(payer: Party, extra?: Partial<ClientOptions>): ReturnType<typeof createClient>;
  /** A registered `@farebox/provider` service taking exact payments through the loopback facilitator. */
  publish(
    name: string,
    price: string,
    extra?: Partial<ProviderOptions>,
    handler?: ServiceHandler,
  ): Promise<{ endpoint: string; owner: Party; servedStorePath: string }>;
  /** Serves `handler` on loopback; returns its base URL. */
  serve(handler: (req: IncomingMessage, body: string) => Promise<{ status: number; headers?: Record<string, string>; body: unknown }>): Promise<string>;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function useExactWorld(): ExactWorld {
  const world = {} as ExactWorld;
  const servers: Server[] = [];
  const closers: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    const devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', passphrase: 'testnet', escrow: { rateLimit: false } });
    const accounts = createAccounts(devnet.network);
    const registry = createRegistryClient(devnet.network);
    async function party(usdc = 0n): Promise<Party> {
      const secret = newSecret();
      const signer = keypairSigner(secret);
      await accounts.fund(signer.publicKey);
      await accounts.ensureUsdcTrustline(signer);
      if (usdc > 0n) await devnet.mintUsdc(signer.publicKey, usdc);
      return Object.assign(signer, { secret });
    }
    const [treasury, feePayer] = await Promise.all([party(), party()]);
    const facilitator = new x402Facilitator().register(
      'stellar:testnet',
      // The platform's scheme: the stock one, settling to the treasury's muxed address for a service too.
      new MuxedExactStellarScheme([createEd25519Signer(feePayer.secret, 'stellar:testnet')], { rpcConfig: { url: devnet.rpcUrl } }),
    );
    async function serve(handler: Parameters<ExactWorld['serve']>[0]): Promise<string> {
      const server = createServer((req, res) => {
        readBody(req)
          .then((body) => handler(req, body))
          .then(
            (out) => {
              res.writeHead(out.status, { 'content-type': 'application/json', ...out.headers });
              res.end(JSON.stringify(out.body));
            },
            (e: unknown) => {
              res.writeHead(500, { 'content-type': 'application/json' });
              res.end(JSON.stringify({ error: e instanceof Error ? e.message : String(e) }));
            },
          );
      });
      servers.push(server);
      return listen(server);
    }
    const platformUrl = await serve(async (req, body) => {
      if (req.method === 'GET' && req.url === '/x402/supported') {
        return { status: 200, body: { ...facilitator.getSupported(), farebox: { payTo: treasury.publicKey, network: 'stellar:testnet' } } };
      }
      const { paymentPayload, paymentRequirements } = JSON.parse(body || '{}');
      if (req.method === 'POST' && req.url === '/x402/verify') return { status: 200, body: await facilitator.verify(paymentPayload, paymentRequirements) };
      if (req.method === 'POST' && req.url === '/x402/settle') return { status: 200, body: await facilitator.settle(paymentPayload, paymentRequirements) };
      return { status: 404, body: { error: 'not found' } };
    });
    Object.assign(world, {
      devnet,
      treasury,
      platformUrl,
      party,
      serve,
      usdcOf: (address: string) => devnet.chain.accounts.get(address)?.usdc?.balance ?? 0n,
      client: (payer: Party, extra: Partial<ClientOptions> = {}) =>
        createClient({
          network: devnet.network,
          secret: payer.secret,
          platformAddress: treasury.publicKey,
          escrow: { apiKey: 'client-escrow-key', budget: { requests: 100_000, windowMs: 1000 } },
          env: {},
          ...extra,
        }),
      async publish(name, price, extra = {}, handler = (payload) => ({ echo: payload })) {
        const owner = await party();
        const servedStorePath = join(await mkdtemp(join(tmpdir(), 'farebox-exact-')), 'served-exact-payments.json');
        const provider = createProvider({
          service: name,
          pricePerCall: price,
          description: `test service ${name}`,
          network: 'local',
          devnetUrl: devnet.url,
          devnetPassphrase: 'testnet',
          wallet: { secret: owner.secret },
          platform: { url: platformUrl },
          exact: { servedStorePath },
          env: {},
          ...extra,
        }).serve(handler);
        const listening = await provider.listen(0, '127.0.0.1');
        closers.push(() => provider.close());
        const endpoint = `${listening.url}/`;
        await registry.register(owner, { service: name, pricePerCall: parseAmount(price), endpoint, description: `test service ${name}` });
        return { endpoint, owner, servedStorePath };
      },
    } satisfies ExactWorld);
  });
  afterAll(async () => {
    for (const close of closers) await close().catch(() => undefined);
    for (const s of servers) s.closeAllConnections?.();
    await Promise.all(servers.map((s) => new Promise((r) => s.close(() => r(undefined)))));
    await world.devnet?.close();
  });
  return world;
}
