import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { createEscrowClient, type EscrowClient } from '@farebox/escrow';
import { encodeStrKey, parseAmount, parsePaymentRequired, randomBytes } from '@farebox/protocol';
import { createProvider, type ProviderOptions, type ServiceHandler } from '@farebox/provider';
import { createAccounts, createRegistryClient, keypairSigner, type TxSigner } from '@farebox/stellar';
import { afterAll, beforeAll } from 'vitest';
import { createClient, type ClientOptions } from '../src/index.js';

export const USDC = 10_000_000n;

export type Party = TxSigner & { secret: string };

export interface World {
  devnet: Devnet;
  treasury: Party;
  /** An escrow client with a generous budget (the devnet runs without a rate limit here). */
  escrow: EscrowClient;
  /** A new funded account with a USDC trustline and `usdc` base units. */
  party(usdc?: bigint): Promise<Party>;
  usdcOf(address: string): bigint;
  /** A client paying from `payer`. */
  client(payer: Party, extra?: Partial<ClientOptions>): ReturnType<typeof createClient>;
  /** Runs a provider-SDK service on the devnet and registers it (owned by a new key, or `owner`). */
  publish(name: string, opts?: PublishOptions): Promise<Published>;
  tempDir(): Promise<string>;
}

export interface PublishOptions {
  price?: string;
  priceFn?: ProviderOptions['priceFn'];
  handler?: ServiceHandler;
  owner?: Party;
  servedStorePath?: string;
  extra?: Partial<ProviderOptions>;
  /** Register this endpoint instead of the provider's own address. */
  registerEndpoint?: string;
  /** Only register (no provider started); needs registerEndpoint. */
  registerOnly?: boolean;
}

export interface Published {
  name: string;
  owner: Party;
  endpoint: string;
  servedStorePath: string;
  /** Starts another provider instance for the same service and store (a restart). */
  restart(handler?: ServiceHandler): Promise<string>;
  close(): Promise<void>;
}

export function newSecret(): string {
  return encodeStrKey('secretSeed', randomBytes(32));
}

/** Starts a devnet (instant ledgers, escrow API without rate limit) and a funded treasury for this test file. */
export function useWorld(): World {
  const closers: Array<() => Promise<void>> = [];
  const world = {} as World;
  beforeAll(async () => {
    const devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant', escrow: { rateLimit: false } });
    const accounts = createAccounts(devnet.network);
    const registry = createRegistryClient(devnet.network);
    const escrowUrl = `${devnet.url}/escrow`;
    async function party(usdc = 0n): Promise<Party> {
      const secret = newSecret();
      const signer = keypairSigner(secret);
      await accounts.fund(signer.publicKey);
      await accounts.ensureUsdcTrustline(signer);
      if (usdc > 0n) await devnet.mintUsdc(signer.publicKey, usdc);
      return Object.assign(signer, { secret });
    }
    const treasury = await party();
    Object.assign(world, {
      devnet,
      treasury,
      escrow: createEscrowClient({
        baseUrl: escrowUrl,
        apiKey: 'test-escrow-key',
        passphrase: devnet.network.passphrase,
        budget: { requests: 100_000, windowMs: 1000 },
      }),
      party,
      usdcOf: (address: string) => devnet.chain.accounts.get(address)?.usdc?.balance ?? 0n,
      client: (payer: Party, extra: Partial<ClientOptions> = {}) =>
        createClient({
          network: 'local',
          devnetUrl: devnet.url,
          secret: payer.secret,
          escrow: { apiKey: 'client-escrow-key', budget: { requests: 100_000, windowMs: 1000 } },
          platformAddress: treasury.publicKey,
          env: {},
          ...extra,
        }),
      tempDir: () => mkdtemp(join(tmpdir(), 'farebox-client-')),
      async publish(name: string, opts: PublishOptions = {}): Promise<Published> {
        const owner = opts.owner ?? (await party());
        const servedStorePath = opts.servedStorePath ?? join(await world.tempDir(), 'served-escrows.json');
        const price = opts.price ?? '0.5';
        const start = async (handler: ServiceHandler) => {
          const provider = createProvider({
            service: name,
            pricePerCall: price,
            ...(opts.priceFn ? { priceFn: opts.priceFn } : {}),
            description: `test service ${name}`,
            network: 'local',
            devnetUrl: devnet.url,
            wallet: { secret: owner.secret },
            trustlessWork: { apiKey: 'provider-escrow-key', platformAddress: treasury.publicKey, baseUrl: escrowUrl },
            servedStorePath,
            env: {},
            ...opts.extra,
          }).serve(handler);
          const listening = await provider.listen(0, '127.0.0.1');
          closers.push(() => provider.close());
          return { provider, url: `${listening.url}/` };
        };
        const handler = opts.handler ?? ((payload) => ({ echo: payload }));
        const first = opts.registerOnly ? undefined : await start(handler);
        const endpoint = opts.registerEndpoint ?? first!.url;
        await registry.register(owner, { service: name, pricePerCall: parseAmount(price), endpoint, description: `test service ${name}` });
        let current = first;
        return {
          name,
          owner,
          endpoint,
          servedStorePath,
          async restart(next = handler) {
            await current?.provider.close();
            current = await start(next);
            return current.url;
          },
          close: async () => {
            await current?.provider.close();
          },
        };
      },
    } satisfies World);
  });
  afterAll(async () => {
    for (const close of closers) await close().catch(() => undefined);
    await world.devnet?.close();
  });
  return world;
}

/** POSTs JSON to a service; returns status, parsed body and headers. */
export async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json: json as Record<string, unknown> | undefined, headers: res.headers };
}

/** Asks a service for a quote and returns its amount, quote id and payTo. */
export async function quoteOf(url: string, payload: unknown) {
  const res = await post(url, payload);
  if (res.status !== 402) throw new Error(`expected 402, got ${res.status}`);
  const q = parsePaymentRequired({ headers: res.headers, body: res.json });
  const accept = q.accepts[0]!;
  return { amount: accept.amount, payTo: accept.payTo, quoteId: String(accept.extra?.quoteId) };
}

/** Opens and funds an escrow by hand (as an attacker or a third-party client would). */
export async function openEscrow(
  world: World,
  payer: Party,
  input: {
    receiver: string;
    engagementId: string;
    amount: bigint;
    fund?: bigint;
    roles?: Partial<Record<'approver' | 'serviceProvider' | 'releaseSigner' | 'platformAddress' | 'disputeResolver', string>>;
  },
): Promise<string> {
  const owner = input.receiver;
  const { contractId } = await world.escrow.deployAndSend(
    {
      engagementId: input.engagementId,
      title: 'hand-made escrow',
      description: `test escrow; payer ${payer.publicKey}`,
      roles: {
        approver: owner,
        serviceProvider: owner,
        releaseSigner: owner,
        receiver: owner,
        platformAddress: world.treasury.publicKey,
        disputeResolver: world.treasury.publicKey,
        ...input.roles,
      },
      amount: input.amount,
      platformFee: 5,
      milestones: [{ description: 'one call' }],
      trustline: { address: world.devnet.network.usdc.contractId, symbol: 'USDC', decimals: 7 },
    },
    payer,
  );
  await world.escrow.run('fundEscrow', { contractId, signer: payer.publicKey, amount: input.fund ?? input.amount }, payer);
  return contractId;
}
