import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { withBazaar } from '@x402/extensions/bazaar';
import { createEmbedder, createSearchIndex, DEFAULT_MODEL_ID } from '@farebox/discovery';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { encodeStrKey, randomBytes } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { eventually } from '@farebox/test-kit';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import { startDiscovery, type RunningDiscovery } from '../src/index.js';

// Item 6 of issue 37: the discovery backend answers the x402 bazaar's catalog
// routes, so a stock `@x402/extensions` client lists Farebox services.
let devnet: Devnet;
let d: RunningDiscovery;
const owners: Record<string, string> = {};
const TREASURY = encodeStrKey('publicKey', randomBytes(32));

const SERVICES = [
  { service: 'skycast', price: 10_000n, description: 'Weather forecast for the hub' },
  { service: 'ledgerly', price: 25_000n, description: 'Bookkeeping and invoices for small shops' },
  { service: 'wordsmith', price: 5_000n, description: 'Rewrites a paragraph in plain English' },
];

async function get(path: string) {
  const res = await fetch(`${d.url}${path}`);
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  const modelDir = await mkdtemp(join(tmpdir(), 'farebox-models-'));
  await writeTinyModel(modelDir, DEFAULT_MODEL_ID, 'model_quantized.onnx');
  const registry = createRegistryClient(devnet.network);
  for (const s of SERVICES) {
    const owner = keypairSigner(encodeStrKey('secretSeed', randomBytes(32)));
    await createAccounts(devnet.network).fund(owner.publicKey);
    await registry.register(owner, { service: s.service, pricePerCall: s.price, endpoint: `https://${s.service}.example/api`, description: s.description });
    owners[s.service] = owner.publicKey;
  }
  d = await startDiscovery({
    port: 0,
    host: '127.0.0.1',
    dataDir: await mkdtemp(join(tmpdir(), 'farebox-disc-bazaar-')),
    network: 'local',
    devnetUrl: devnet.url,
    env: { FAREBOX_TREASURY_ADDRESS: TREASURY },
    pollIntervalMs: 50,
    snapshotIntervalMs: 0,
    searchIndex: createSearchIndex({ embedder: createEmbedder({ modelDir, allowRemote: false }), vectorIndex: 'flat' }),
  });
  await eventually('the catalog is embedded', async () => ((await get('/health')).body.vectors === SERVICES.length ? true : undefined));
}, 60_000);

afterAll(async () => {
  await d?.close();
  await devnet?.close();
});

describe('the x402 bazaar on the discovery backend', () => {
  it('lists every service to the stock client, with its endpoint, price, payee and description', async () => {
    const client = withBazaar(new HTTPFacilitatorClient({ url: d.url }));
    const page = await client.extensions.discovery.listResources({ type: 'http' });
    expect(page.x402Version).toBe(2);
    expect(page.pagination).toEqual({ limit: 50, offset: 0, total: 3 });
    // By service name; the local network has no `exact`: each service offers its escrow, paid to its owner.
    expect(page.items.map((r) => r.resource)).toEqual(['https://ledgerly.example/api', 'https://skycast.example/api', 'https://wordsmith.example/api']);
    const sky = page.items[1]!;
    expect(sky).toMatchObject({
      type: 'http',
      x402Version: 2,
      description: 'Weather forecast for the hub',
      serviceName: 'skycast',
      accepts: [
        {
          scheme: 'escrow',
          network: 'stellar:local',
          asset: `USDC:${devnet.network.usdc.issuer}`,
          amount: '10000',
          payTo: owners.skycast,
          maxTimeoutSeconds: 300,
          extra: { service: 'skycast', escrow: { platformAddress: TREASURY, platformFee: 5 } },
        },
      ],
      metadata: { service: 'skycast', description: 'Weather forecast for the hub', price: '0.001', priceBaseUnits: '10000', ownerWallet: owners.skycast },
    });
    expect(Number.isNaN(Date.parse(sky.lastUpdated))).toBe(false);
  });

  it('pages with limit and offset and filters as the reference does', async () => {
    const client = withBazaar(new HTTPFacilitatorClient({ url: d.url }));
    const second = await client.extensions.discovery.listResources({ limit: 2, offset: 2 });
    expect(second.items.map((r) => r.metadata?.service)).toEqual(['wordsmith']);
    expect(second.pagination).toEqual({ limit: 2, offset: 2, total: 3 });
    const names = async (query: string) => (await get(`/discovery/resources?${query}`)).body.items.map((r: { serviceName: string }) => r.serviceName);
    expect(await names(`payTo=${owners.ledgerly}`)).toEqual(['ledgerly']);
    expect(await names('scheme=escrow&network=stellar:local')).toEqual(['ledgerly', 'skycast', 'wordsmith']);
    expect(await names('scheme=exact')).toEqual([]);
    expect(await names('network=stellar:testnet')).toEqual([]);
    expect(await names('type=mcp')).toEqual([]);
    expect(await names('extensions=bazaar')).toEqual([]);
    expect((await get('/discovery/resources?scheme=escrow&limit=1&offset=1')).body.pagination).toEqual({ limit: 1, offset: 1, total: 3 });
  });

  it('searches by meaning in the same item shape, a page at a time', async () => {
    // A Spanish query with no word in common with the description: found by its embedding.
    const { status, body } = await get(`/discovery/search?query=${encodeURIComponent('pronóstico del tiempo')}&limit=1`);
    expect(status).toBe(200);
    expect(body).toMatchObject({ x402Version: 2, query: 'pronóstico del tiempo', searchMode: 'hybrid', partialResults: false });
    expect(body.resources.map((r: { serviceName: string }) => r.serviceName)).toEqual(['skycast']);
    expect(body.resources[0]).toMatchObject({ resource: 'https://skycast.example/api', accepts: [{ scheme: 'escrow', amount: '10000' }] });
    // The next page starts at the cursor and ends with none.
    const all = (await get(`/discovery/search?query=${encodeURIComponent('weather forecast invoices paragraph')}&limit=2`)).body;
    expect(all.resources).toHaveLength(2);
    expect(all.pagination).toEqual({ limit: 2, cursor: '2' });
    const rest = (await get(`/discovery/search?query=${encodeURIComponent('weather forecast invoices paragraph')}&limit=2&cursor=2`)).body;
    expect(rest.pagination).toEqual({ limit: 2, cursor: null });
    const seen = [...all.resources, ...rest.resources].map((r: { serviceName: string }) => r.serviceName).sort();
    expect(seen).toEqual(['ledgerly', 'skycast', 'wordsmith']);
    // Filters apply to the ranking.
    const q = encodeURIComponent('weather forecast and invoices');
    const both = (await get(`/discovery/search?query=${q}`)).body.resources.map((r: { serviceName: string }) => r.serviceName);
    expect(both.sort()).toEqual(['ledgerly', 'skycast']);
    const filtered = (await get(`/discovery/search?query=${q}&payTo=${owners.ledgerly}`)).body;
    expect(filtered.resources.map((r: { serviceName: string }) => r.serviceName)).toEqual(['ledgerly']);
    expect((await get(`/discovery/search?query=${q}&scheme=exact`)).body.resources).toEqual([]);
  });

  it('refuses bad parameters with their message', async () => {
    const cases: Array<[string, string]> = [
      ['/discovery/resources?limit=0', 'invalid limit (must be an integer from 1 to 500)'],
      ['/discovery/resources?limit=501', 'invalid limit (must be an integer from 1 to 500)'],
      ['/discovery/resources?offset=-1', 'invalid offset (must be an integer from 0 to 1000000)'],
      ['/discovery/resources?type=ftp', 'invalid type (must be http or mcp)'],
      ['/discovery/resources?network=stellar', 'invalid network (a CAIP-2 id such as stellar:testnet)'],
      ['/discovery/resources?scheme=Ex%20act', 'invalid scheme (a scheme name such as exact)'],
      ['/discovery/resources?payTo=', 'invalid payTo (an address of 1 to 128 printable characters)'],
      ['/discovery/resources?extensions=a.b', 'invalid extensions (an extension name such as bazaar)'],
      ['/discovery/resources?sort=name', 'unknown parameter: sort'],
      ['/discovery/resources?limit=1&limit=2', 'parameter given more than once: limit'],
      ['/discovery/search', 'query required'],
      ['/discovery/search?query=%20', 'query required'],
      [`/discovery/search?query=${'a'.repeat(513)}`, 'query too long (max 512)'],
      ['/discovery/search?query=x&limit=101', 'invalid limit (must be an integer from 1 to 100)'],
      ['/discovery/search?query=x&cursor=abc', 'invalid cursor (pass the pagination.cursor of the previous page)'],
      ['/discovery/search?query=x&offset=2', 'unknown parameter: offset'],
    ];
    for (const [path, error] of cases) expect(await get(path), path).toEqual({ status: 400, body: { error } });
  });
});
