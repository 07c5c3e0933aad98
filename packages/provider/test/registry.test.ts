import { CERTIFICATE_HEADER, ConfigError, encodeStrKey, randomBytes } from '@farebox/protocol';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ProviderError, createProvider, publicKeyFromSecret, type Provider, type RegistrationInput, type RegistryAgent, type RegistryRegistrar } from '../src/index.js';
import { baseOptions, certificateFor, newSecret, newSigner, ownerWallet, post, type Signer } from './helpers.js';

/** A registry kept in a Map that signs as `owner`: the shape @farebox/stellar's client is adapted to. */
class MapRegistry implements RegistryRegistrar {
  readonly agents = new Map<string, RegistryAgent>();
  constructor(private readonly owner: string) {}
  async getAgent(service: string) {
    return this.agents.get(service) ?? null;
  }
  async registerAgent(input: RegistrationInput) {
    if (this.agents.has(input.service)) throw new Error('already registered');
    this.agents.set(input.service, { owner: this.owner, ...input });
    return { transaction: `tx_register_${input.service}` };
  }
  async updateAgent(input: RegistrationInput) {
    this.agents.set(input.service, { owner: this.owner, ...input });
    return { transaction: `tx_update_${input.service}` };
  }
}

let platform: Signer;
const started: Provider[] = [];
const contractId = encodeStrKey('contract', randomBytes(32));

beforeAll(async () => {
  platform = await newSigner();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

describe('registration check', () => {
  async function callWith(registry: MapRegistry) {
    const provider = createProvider(baseOptions(platform, { registry, contractId })).serve(() => 'served');
    started.push(provider);
    const { url } = await provider.listen(0, '127.0.0.1');
    const body = '{}';
    return post(`${url}/`, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
  }

  it('serves when the registry names this provider as the owner', async () => {
    const registry = new MapRegistry(ownerWallet);
    registry.agents.set('echo', { owner: ownerWallet, pricePerCall: 10_000n, endpoint: 'http://x' });
    expect(await callWith(registry)).toMatchObject({ status: 200, json: 'served' });
  });

  it('refuses with 503 when the service is not registered', async () => {
    const res = await callWith(new MapRegistry(ownerWallet));
    expect(res.status).toBe(503);
    expect(res.json?.error).toBe(`service "echo" is not registered in the registry ${contractId}; run provider.bootstrap()`);
  });

  it('refuses with 503 when the registry names another owner', async () => {
    const other = publicKeyFromSecret(newSecret());
    const registry = new MapRegistry(other);
    registry.agents.set('echo', { owner: other, pricePerCall: 10_000n, endpoint: 'http://x' });
    const res = await callWith(registry);
    expect(res.status).toBe(503);
    expect(res.json?.error).toBe(`the registry owner of "echo" is ${other}, not this provider's wallet ${ownerWallet}`);
  });
});

describe('bootstrap()', () => {
  const ready = { contractId, endpoint: 'https://echo.example.com' };

  it('refuses with BOOTSTRAP_UNAVAILABLE and registers nothing when no registry client can register', async () => {
    const provider = createProvider(baseOptions(platform, ready));
    await expect(provider.bootstrap()).rejects.toMatchObject({ name: 'ProviderError', code: 'BOOTSTRAP_UNAVAILABLE' });
    await expect(provider.bootstrap()).rejects.toThrow(/needs a registry client .*Nothing was registered/);
  });

  it('lists what is missing before touching any registry', async () => {
    const provider = createProvider(baseOptions(platform, { ownerWallet, wallet: {}, network: 'testnet', allowUnverified: true }));
    const error = await provider.bootstrap().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toHaveLength(3);
  });

  it('registers, then reports unchanged, then updates when the price changes', async () => {
    const registry = new MapRegistry(ownerWallet);
    expect(await createProvider(baseOptions(platform, { ...ready, registry })).bootstrap()).toEqual({
      action: 'registered',
      service: 'echo',
      owner: ownerWallet,
      endpoint: ready.endpoint,
      transaction: 'tx_register_echo',
    });
    expect((await createProvider(baseOptions(platform, { ...ready, registry })).bootstrap()).action).toBe('unchanged');
    const updated = await createProvider(baseOptions(platform, { ...ready, registry, pricePerCall: 0.002 })).bootstrap();
    expect(updated).toMatchObject({ action: 'updated', transaction: 'tx_update_echo' });
    expect(registry.agents.get('echo')?.pricePerCall).toBe(20_000n);
  });

  it('refuses a name registered to another owner', async () => {
    const other = publicKeyFromSecret(newSecret());
    const registry = new MapRegistry(other);
    registry.agents.set('echo', { owner: other, pricePerCall: 1n, endpoint: 'https://elsewhere.example.com' });
    const error = await createProvider(baseOptions(platform, { ...ready, registry })).bootstrap().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ code: 'NAME_TAKEN' });
  });
});
