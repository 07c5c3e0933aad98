import { CERTIFICATE_HEADER, ConfigError } from '@farebox/protocol';
import { LOCAL_REGISTRY_CONTRACT_ID, createAccounts, createRegistryClient, keypairSigner, type RegistryClient } from '@farebox/stellar';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError, createProvider, publicKeyFromSecret, type Provider, type ProviderOptions } from '../src/index.js';
import { baseOptions, certificateFor, chain, newSecret, newSigner, ownerWallet, post, useDevnet, type Signer } from './helpers.js';

// Every test here runs against an in-process devnet through the real RPC and
// Horizon wire, with the provider's default (chain-backed) registry.
useDevnet({ registerEcho: false });

let platform: Signer;
let registry: RegistryClient;
const started: Provider[] = [];
const endpoint = 'http://127.0.0.1:9/svc';

beforeAll(async () => {
  platform = await newSigner();
  registry = createRegistryClient(chain.devnet!.network);
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

/** A fresh service name per test: the devnet lives for the whole file. */
let counter = 0;
const freshName = () => `svc-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

function provider(service: string, extra: Partial<ProviderOptions> = {}): Provider {
  const p = createProvider(baseOptions(platform, { service, endpoint, ...extra }));
  started.push(p);
  return p;
}

async function signedCall(p: Provider, service: string) {
  p.serve(() => 'served');
  const { url } = await p.listen(0, '127.0.0.1');
  const body = '{}';
  return post(`${url}/svc`, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body, { service }) });
}

describe('bootstrap() on the devnet', () => {
  it('never registers a name that breaks the service-name policy: the provider is refused at construction, nothing reaches the chain', async () => {
    for (const service of ['Echo', '\u0435cho', 'echo\u200b', 'my_svc', 'my.svc', 'echo--2', 'echo-', 'a\u0000b']) {
      let error: unknown;
      try {
        await createProvider(baseOptions(platform, { service, endpoint })).bootstrap();
      } catch (e) {
        error = e;
      }
      expect(error, JSON.stringify(service)).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems, JSON.stringify(service)).toContain(
        'service: invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit',
      );
      expect(await registry.getAgent(service)).toBeNull();
    }
  });

  it('registers a service configured with no payment path yet (no platform key, no escrow API key): escrow disabled, registration works', async () => {
    const service = freshName();
    const warnings: string[] = [];
    const result = await provider(service, { platform: {}, onWarning: (m) => warnings.push(m) }).bootstrap();
    expect(warnings).toEqual([expect.stringMatching(/^no payment can be accepted yet/)]);
    expect(result).toMatchObject({ action: 'registered', service, owner: ownerWallet, endpoint });
    expect(await registry.getAgent(service)).toMatchObject({ owner: ownerWallet, pricePerCall: 10_000n, endpoint });
  });

  it('/health of a service not registered yet says so (degraded, registered: false); once bootstrapped it is ok', async () => {
    const service = freshName();
    const p = provider(service).serve(() => 'x');
    const { url } = await p.listen(0, '127.0.0.1');
    expect(await (await fetch(`${url}/health`)).json()).toEqual({
      status: 'degraded',
      service,
      network: 'local',
      registered: false,
      verified: false,
      error: `service "${service}" is not registered in the registry ${LOCAL_REGISTRY_CONTRACT_ID}; run provider.bootstrap()`,
    });
    await p.bootstrap();
    expect(await (await fetch(`${url}/health`)).json()).toEqual({ status: 'ok', service, network: 'local', registered: true, verified: true });
  });

  it('funds the owner, sets the USDC trustline and registers the service with its price, endpoint and description', async () => {
    const service = freshName();
    const result = await provider(service).bootstrap();
    expect(result).toMatchObject({ action: 'registered', service, owner: ownerWallet, endpoint, transaction: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(result.explorerUrl).toBe(`${chain.devnet!.url}/explorer/local/tx/${result.transaction}`);
    expect(await registry.getAgent(service)).toMatchObject({
      owner: ownerWallet,
      pricePerCall: 10_000n,
      endpoint,
      description: 'Echoes the JSON payload back.',
    });
    expect(await createAccounts(chain.devnet!.network).balances(ownerWallet)).toMatchObject({ exists: true, usdc: 0n });
  });

  it('creates a new owner account through the friendbot and reports it, then reports unchanged on the second run', async () => {
    const service = freshName();
    const secret = newSecret();
    const first = await provider(service, { wallet: { secret } }).bootstrap();
    expect(first).toMatchObject({ action: 'registered', funded: true, trustlineTransaction: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const second = await provider(service, { wallet: { secret } }).bootstrap();
    expect(second).toEqual({ action: 'unchanged', service, owner: publicKeyFromSecret(secret), endpoint, funded: false });
  });

  it('updates the entry when the price or the description changed, and the chain shows it', async () => {
    const service = freshName();
    await provider(service).bootstrap();
    const repriced = await provider(service, { pricePerCall: '0.0025' }).bootstrap();
    expect(repriced).toMatchObject({ action: 'updated', transaction: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(await registry.getAgent(service)).toMatchObject({ pricePerCall: 25_000n, description: 'Echoes the JSON payload back.' });
    const described = await provider(service, { pricePerCall: '0.0025', description: 'Now with timestamps.' }).bootstrap();
    expect(described.action).toBe('updated');
    expect(await registry.getAgent(service)).toMatchObject({ pricePerCall: 25_000n, description: 'Now with timestamps.', endpoint });
    const moved = await provider(service, { pricePerCall: '0.0025', description: 'Now with timestamps.', endpoint: 'http://127.0.0.1:10/svc' }).bootstrap();
    expect(moved.action).toBe('updated');
    expect((await registry.getAgent(service))?.endpoint).toBe('http://127.0.0.1:10/svc');
  });

  it('refuses with NAME_TAKEN when another key owns the name, and leaves the entry alone', async () => {
    const service = freshName();
    const other = newSecret();
    await provider(service, { wallet: { secret: other } }).bootstrap();
    const error = await provider(service, { pricePerCall: '5' })
      .bootstrap()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({
      code: 'NAME_TAKEN',
      message: `service name "${service}" is registered to ${publicKeyFromSecret(other)}, not to ${ownerWallet}: pick another name`,
    });
    expect(await registry.getAgent(service)).toMatchObject({ owner: publicKeyFromSecret(other), pricePerCall: 10_000n });
  });

  it('registers the listening address on the local network when no endpoint is configured', async () => {
    const service = freshName();
    const p = provider(service, { endpoint: undefined });
    const { url } = await p.listen(0, '127.0.0.1');
    expect((await p.bootstrap()).endpoint).toBe(`${url}/`);
    expect((await registry.getAgent(service))?.endpoint).toBe(`${url}/`);
  });

  it('lists what is missing before touching the chain', async () => {
    const p = createProvider(baseOptions(platform, { ownerWallet, wallet: {}, network: 'testnet', allowUnverified: true }));
    const error = await p.bootstrap().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'endpoint (PUBLIC_ENDPOINT) required: it is stored on-chain at registration',
      'contractId (STELLAR_CONTRACT_ID) required: the registry to register in',
      'a wallet secret (AGENT_WALLET_SECRET or KEYPAIR_PATH) is required to sign the registration',
    ]);
  });

  it('refuses with BOOTSTRAP_UNAVAILABLE when the injected registry can only read', async () => {
    const service = freshName();
    const readOnly = { getAgent: (name: string) => registry.getAgent(name) };
    await expect(provider(service, { registry: readOnly }).bootstrap()).rejects.toMatchObject({ code: 'BOOTSTRAP_UNAVAILABLE' });
    expect(await registry.getAgent(service)).toBeNull();
  });

  it('on a network without a friendbot, refuses to register for an account that does not exist', async () => {
    const service = freshName();
    const secret = newSecret();
    const devnet = chain.devnet!;
    // Mainnet's rules (no friendbot) with the devnet answering the reads.
    const p = provider(service, {
      network: 'mainnet',
      endpoint: 'https://svc.example.com',
      contractId: LOCAL_REGISTRY_CONTRACT_ID,
      rpcUrl: devnet.rpcUrl,
      horizonUrl: devnet.horizonUrl,
      wallet: { secret },
    });
    const error = await p.bootstrap().catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'ProviderError', code: 'UNFUNDED' });
    expect((error as Error).message).toMatch(
      new RegExp(`^the owner account ${publicKeyFromSecret(secret)} does not exist on mainnet, which has no friendbot: send it XLM`),
    );
    expect(await registry.getAgent(service)).toBeNull();
    expect((await createAccounts(devnet.network).balances(publicKeyFromSecret(secret))).exists).toBe(false);
  });
});

describe('registration check against the chain', () => {
  it('serves a platform-signed call once the chain names this provider as the owner', async () => {
    const service = freshName();
    await provider(service).bootstrap();
    expect(await signedCall(provider(service), service)).toMatchObject({ status: 200, json: 'served' });
  });

  it('refuses paid calls with 503 while the service is not registered', async () => {
    const service = freshName();
    const res = await signedCall(provider(service), service);
    expect(res.status).toBe(503);
    expect(res.json?.error).toBe(`service "${service}" is not registered in the registry ${LOCAL_REGISTRY_CONTRACT_ID}; run provider.bootstrap()`);
  });

  it('refuses paid calls with 503 when the registry entry names another owner', async () => {
    const service = freshName();
    const other = newSecret();
    await createAccounts(chain.devnet!.network).fund(publicKeyFromSecret(other));
    await registry.register(keypairSigner(other), { service, pricePerCall: 10_000n, endpoint, description: 'not yours' });
    const res = await signedCall(provider(service), service);
    expect(res.status).toBe(503);
    expect(res.json?.error).toBe(`the registry owner of "${service}" is ${publicKeyFromSecret(other)}, not this provider's wallet ${ownerWallet}`);
  });

  it('says where it looked when the registry cannot be reached', async () => {
    const service = freshName();
    const res = await signedCall(provider(service, { devnetUrl: 'http://127.0.0.1:9/devnet' }), service);
    expect(res.status).toBe(503);
    expect(res.json?.error).toMatch(
      new RegExp(
        `^cannot confirm the registration of "${service}": registry unreachable at http://127\\.0\\.0\\.1:9/devnet/soroban/rpc .*is the devnet running\\? \\(FAREBOX_DEVNET_URL\\)$`,
      ),
    );
  });
});
