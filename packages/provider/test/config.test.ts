import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CERTIFICATE_HEADER, ConfigError, encodeStrKey, randomBytes } from '@farebox/protocol';
import { LOCAL_REGISTRY_CONTRACT_ID, resolveNetwork } from '@farebox/stellar';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProvider, ensureKeypairFile, publicKeyFromSecret, type Provider, type ProviderOptions } from '../src/index.js';
import { baseOptions, certificateFor, newSecret, newSigner, ownerSecret, post, type Signer } from './helpers.js';

let platform: Signer;
const started: Provider[] = [];
const contractId = () => encodeStrKey('contract', randomBytes(32));

beforeAll(async () => {
  platform = await newSigner();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

function configError(options: ProviderOptions): ConfigError {
  try {
    createProvider(options);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('lists every problem at once in one ConfigError', () => {
    const error = configError({
      service: 'a-service-name-that-is-far-too-long-for-the-registry',
      pricePerCall: '0.00000001',
      endpoint: 'ftp://example.com',
      network: 'devnet' as ProviderOptions['network'],
      platform: { publicKey: 'GNOTAKEY' },
      trustlessWork: { apiKey: 'tw_key' },
      bodyLimit: 'lots',
      rateLimitPerMinute: 0,
      env: {},
    });
    expect(error.problems).toEqual([
      'service: service name too long (max 32)',
      `pricePerCall "0.00000001": amount has more than 7 decimals; a price is USDC as a decimal string, e.g. '0.002'`,
      'network must be testnet, mainnet or local (got "devnet")',
      'endpoint must be an http(s) URL: "ftp://example.com"',
      'platform.publicKey is not a valid G... public key',
      'trustlessWork.platformAddress (TRUSTLESS_WORK_PLATFORM_ADDRESS) is required when escrow is active (an escrow API key is set)',
      'wallet required: set wallet.secret (AGENT_WALLET_SECRET), wallet.keypairPath (KEYPAIR_PATH) or ownerWallet; payouts go to this account',
      "bodyLimit must be a size such as '256kb' or '1mb' (1 byte to 64mb), got \"lots\"",
      'rateLimitPerMinute must be a positive integer',
    ]);
    expect(error.message).toContain('; ');
  });

  it('reports an escrow API key from the environment without a platform address as a problem about platformAddress', () => {
    const error = configError({ ...baseOptions(platform), env: { TRUSTLESS_WORK_API_KEY: 'tw_key' } });
    expect(error.problems).toEqual([expect.stringContaining('platformAddress')]);
  });

  it('starts with no payment path (no platform key, no escrow key): warns once, serves /manifest and says why a paid request cannot be served', async () => {
    const warnings: string[] = [];
    const p = createProvider({ ...baseOptions(platform), platform: {}, onWarning: (m) => warnings.push(m) }).serve((payload) => ({ echo: payload }));
    started.push(p);
    expect(warnings).toEqual([
      expect.stringMatching(/^no payment can be accepted yet: set platform.publicKey \(FAREBOX_PLATFORM_PUBLIC_KEY\).*TRUSTLESS_WORK_API_KEY/),
    ]);
    const { url } = await p.listen(0, '127.0.0.1');
    const manifest = await fetch(`${url}/manifest`);
    expect(manifest.status).toBe(200);
    expect(await manifest.json()).toMatchObject({ service: 'echo', payments: [] });
    const health = await (await fetch(`${url}/health`)).json();
    expect(health).toMatchObject({ status: 'degraded', error: warnings[0] });
    const paid = await post(`${url}/`, '{"a":1}');
    expect(paid.status).toBe(503);
    expect(paid.json).toEqual({ error: warnings[0] });
    // A platform key alone starts without a warning.
    const quiet: string[] = [];
    started.push(createProvider({ ...baseOptions(platform), onWarning: (m) => quiet.push(m) }));
    expect(quiet).toEqual([]);
  });

  it('requires https for a public endpoint on testnet but not on the local network', () => {
    expect(configError({ ...baseOptions(platform), network: 'testnet', endpoint: 'http://example.com/x' }).problems).toEqual([
      'endpoint must use https on testnet (callers pay before they reach it)',
    ]);
    expect(createProvider({ ...baseOptions(platform), endpoint: 'http://example.com/x' }).config.endpointPath).toBe('/x');
  });

  it('takes the option first, then the environment variable, then the network preset', () => {
    const envContract = contractId();
    const optionContract = contractId();
    const otherPlatform = publicKeyFromSecret(newSecret());
    const env = {
      STELLAR_NETWORK: 'testnet',
      STELLAR_CONTRACT_ID: envContract,
      STELLAR_RPC_URL: 'https://rpc.example.com',
      FAREBOX_PLATFORM_PUBLIC_KEY: otherPlatform,
      PUBLIC_ENDPOINT: 'https://env.example.com/svc',
      FAREBOX_DISCOVERY_URL: 'https://discovery.example.com',
      BACKEND_URL: 'https://backend.example.com',
      AGENT_WALLET_SECRET: newSecret(),
    };
    const fromEnv = createProvider({ service: 'svc', pricePerCall: 1, env }).config;
    expect(fromEnv).toMatchObject({
      network: 'testnet',
      x402Network: 'stellar:testnet',
      contractId: envContract,
      rpcUrl: 'https://rpc.example.com',
      platformPublicKey: otherPlatform,
      endpoint: 'https://env.example.com/svc',
      endpointPath: '/svc',
      discoveryUrl: 'https://discovery.example.com',
      ownerWallet: publicKeyFromSecret(env.AGENT_WALLET_SECRET),
      asset: `USDC:${resolveNetwork({ network: 'testnet', env: {} }).usdc.issuer}`,
    });
    const fromOptions = createProvider({
      service: 'svc',
      pricePerCall: 1,
      env,
      network: 'mainnet',
      contractId: optionContract,
      platform: { publicKey: platform.publicKey },
      endpoint: 'https://option.example.com',
      discoveryUrl: 'https://d2.example.com',
      wallet: { secret: ownerSecret },
    }).config;
    expect(fromOptions).toMatchObject({
      network: 'mainnet',
      x402Network: 'stellar:pubnet',
      contractId: optionContract,
      rpcUrl: 'https://rpc.example.com',
      platformPublicKey: platform.publicKey,
      endpoint: 'https://option.example.com',
      discoveryUrl: 'https://d2.example.com',
      ownerWallet: publicKeyFromSecret(ownerSecret),
    });
    const fromPreset = createProvider({ ...baseOptions(platform), network: 'testnet', env: { BACKEND_URL: 'https://backend.example.com' } }).config;
    expect(fromPreset).toMatchObject({
      rpcUrl: 'https://soroban-testnet.stellar.org',
      horizonUrl: 'https://horizon-testnet.stellar.org',
      friendbotUrl: 'https://friendbot.stellar.org',
      discoveryUrl: 'https://backend.example.com',
    });
    expect(fromPreset.contractId).toBeUndefined();
    expect(createProvider(baseOptions(platform)).config).toMatchObject({
      contractId: LOCAL_REGISTRY_CONTRACT_ID,
      rpcUrl: 'http://127.0.0.1:8787/devnet/soroban/rpc',
      horizonUrl: 'http://127.0.0.1:8787/devnet',
      friendbotUrl: 'http://127.0.0.1:8787/devnet/friendbot',
    });
    const devnetFromEnv = createProvider({ ...baseOptions(platform), env: { FAREBOX_DEVNET_URL: 'http://127.0.0.1:5555/devnet' } }).config;
    expect(devnetFromEnv.rpcUrl).toBe('http://127.0.0.1:5555/devnet/soroban/rpc');
    expect(createProvider({ ...baseOptions(platform), network: 'mainnet', contractId: optionContract }).config.friendbotUrl).toBeUndefined();
  });

  it('reads the owner key from KEYPAIR_PATH when AGENT_WALLET_SECRET is unset, and says when the file is missing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-provider-'));
    const path = join(dir, 'keypair');
    const { publicKey, created } = ensureKeypairFile(path);
    expect(created).toBe(true);
    expect(ensureKeypairFile(path)).toEqual({ publicKey, created: false });
    const options = { ...baseOptions(platform), wallet: undefined };
    expect(createProvider({ ...options, env: { KEYPAIR_PATH: path } }).config.ownerWallet).toBe(publicKey);
    const jsonPath = join(dir, 'keypair.json');
    await writeFile(jsonPath, JSON.stringify({ secret: ownerSecret }));
    expect(createProvider({ ...options, env: { KEYPAIR_PATH: jsonPath } }).config.ownerWallet).toBe(publicKeyFromSecret(ownerSecret));
    expect(configError({ ...options, env: { KEYPAIR_PATH: join(dir, 'missing') } }).problems).toEqual([
      expect.stringMatching(/^KEYPAIR_PATH file .*missing does not exist/),
    ]);
    expect(configError({ ...options, env: { AGENT_WALLET_SECRET: 'SNOTASECRET' } }).problems).toEqual(['AGENT_WALLET_SECRET is not a valid S... secret seed']);
  });

  it('accepts body limits written as in express', () => {
    expect(createProvider({ ...baseOptions(platform), bodyLimit: '1mb' }).config.bodyLimit).toBe(1024 * 1024);
    expect(createProvider({ ...baseOptions(platform), bodyLimit: '1.5kb' }).config.bodyLimit).toBe(1536);
    expect(createProvider(baseOptions(platform)).config.bodyLimit).toBe(256 * 1024);
  });
});

describe('degraded mode', () => {
  it('refuses paid calls with 503 naming contractId when no registry contract id resolves', async () => {
    const provider = createProvider({ ...baseOptions(platform), network: 'testnet', endpoint: 'https://echo.example.com' }).serve(() => 'x');
    started.push(provider);
    const { url } = await provider.listen(0, '127.0.0.1');
    const body = '{}';
    const variants: Array<Record<string, string>> = [{}, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) }];
    for (const headers of variants) {
      const res = await post(`${url}/`, body, headers);
      expect(res.status).toBe(503);
      expect(res.json?.error).toMatch(/^degraded mode: no registry contractId/);
    }
    expect(await (await fetch(`${url}/health`)).json()).toMatchObject({ status: 'degraded', verified: false });
    expect((await fetch(`${url}/manifest`)).status).toBe(200);
  });

  it('serves without a contract id when allowUnverified is true', async () => {
    const provider = createProvider({ ...baseOptions(platform), network: 'testnet', allowUnverified: true }).serve(() => 'x');
    started.push(provider);
    const { url } = await provider.listen(0, '127.0.0.1');
    const body = '{}';
    expect((await post(`${url}/`, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) })).status).toBe(200);
  });
});
