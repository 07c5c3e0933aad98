import { createServer, type Server } from 'node:http';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { withBazaar } from '@x402/extensions/bazaar';
import { createGatewayClient } from '@farebox/client';
import { createRegistryClient, keypairSigner } from '@farebox/stellar';
import { eventually } from '@farebox/test-kit';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import { startHttpStack, type HttpStack } from './kit.js';

// Issue 37, item 6: the gateway answers the x402 bazaar's catalog routes, at
// its root and under the facilitator's base /x402, so a stock catalog client
// lists Farebox services.
/** The gateway's default model id (docs/search.md): a tiny model written under it gives hybrid search. */
const DEFAULT_MODEL_ID = 'Xenova/multilingual-e5-small';
let h: HttpStack;
/** The handler on a loopback port: the stock facilitator client takes a URL only. */
let url: string;
let server: Server;
let owner: string;
let endpoint: string;
const bazaar = {
  info: { input: { type: 'http', method: 'POST', bodyType: 'json', body: { city: 'Lima' } }, output: { type: 'json', example: { tempC: 21 } } },
  schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { input: { type: 'object' } }, required: ['input'] },
};

async function get(path: string) {
  const res = await h.fetch(path);
  return { status: res.status, body: (await res.json()) as any };
}
const names = (items: Array<{ serviceName: string }>) => items.map((r) => r.serviceName);

beforeAll(async () => {
  const modelDir = await mkdtemp(join(tmpdir(), 'farebox-models-'));
  await writeTinyModel(modelDir, DEFAULT_MODEL_ID, 'model_quantized.onnx');
  h = await startHttpStack({ gateway: { modelDir } });
  url = await h.listen();
  // A loopback service whose manifest offers escrow and describes its input and output (the bazaar extension).
  const kp = Keypair.random();
  await h.devnet.friendbot(kp.publicKey());
  owner = kp.publicKey();
  server = createServer((req, res) => {
    if (req.url !== '/api/manifest') return void res.writeHead(402).end();
    const manifest = {
      service: 'skycast',
      ownerWallet: owner,
      pricePerCall: 0.001,
      priceBaseUnits: '10000',
      description: 'Weather forecast for the hub',
      dynamicPricing: false,
      payments: ['platform', 'escrow'],
      network: 'local',
      bazaar,
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(manifest));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}/api`;
  await createRegistryClient(h.core.network).register(keypairSigner(kp.secret()), {
    service: 'skycast',
    pricePerCall: 10_000n,
    endpoint,
    description: 'Weather forecast for the hub',
  });
  // A service made with @farebox/provider: paid through the gateway only on this network (no escrow configured).
  await h.publish('echo', '0.01');
  await eventually('both services embedded', async () => (h.core.searchIndex.status().vectors === 2 ? true : undefined));
}, 120_000);

afterAll(async () => {
  server?.close();
  await h?.close();
});

describe('the x402 bazaar on the gateway', () => {
  it("lists every service to the stock client at the facilitator's base, with its price, payee, description and bazaar extension", async () => {
    const client = withBazaar(new HTTPFacilitatorClient({ url: `${url}/x402` }));
    const page = await client.extensions.discovery.listResources({ type: 'http' });
    expect(page.x402Version).toBe(2);
    expect(page.pagination).toEqual({ limit: 50, offset: 0, total: 2 });
    expect(names(page.items as never)).toEqual(['echo', 'skycast']);
    // The 2.9.0 DiscoveryResource type lacks the fields Farebox adds (description, metadata): read them as JSON.
    const [echo, sky] = page.items as unknown as Array<Record<string, unknown>>;
    expect(sky).toMatchObject({
      resource: endpoint,
      type: 'http',
      x402Version: 2,
      description: 'Weather forecast for the hub',
      accepts: [
        {
          scheme: 'escrow',
          network: 'stellar:local',
          asset: `USDC:${h.core.network.usdc.issuer}`,
          amount: '10000',
          payTo: owner,
          maxTimeoutSeconds: 300,
          extra: { service: 'skycast', escrow: { platformAddress: h.core.treasuryAddress, platformFee: 5 } },
        },
      ],
      extensions: { bazaar },
      metadata: {
        price: '0.001',
        priceBaseUnits: '10000',
        input: bazaar.info.input,
        output: bazaar.info.output,
        schema: bazaar.schema,
        // How it can be paid (docs/api.md, "Payment rails"): through the gateway (credits, an MPP channel: on by default on local), and escrow at the service.
        rails: ['credits', 'mpp-channel', 'escrow'],
      },
    });
    // The SDK service's manifest lists no direct payment here: listed with its price, no offer.
    expect(echo).toMatchObject({
      description: 'core test service echo',
      accepts: [],
      metadata: { price: '0.01', priceBaseUnits: '100000', rails: ['credits', 'mpp-channel'] },
    });
    // Each resource carries the service's health as the gateway measures it (docs/api.md, "Service health").
    expect((echo as { metadata: { health: unknown } }).metadata.health).toMatchObject({ status: 'new', windows: { '24h': { calls: 0 } } });
    // The same listing at the gateway's root; both answers are the contract's (the typed client checks them).
    expect((await get('/discovery/resources')).body).toEqual(page);
    const api = createGatewayClient({ baseUrl: h.origin, fetch: h.fetch as typeof fetch });
    expect(await api.request('facilitatorBazaarResources', { query: { scheme: 'escrow' } })).toMatchObject({ items: [{ serviceName: 'skycast' }] });
    expect(await api.request('bazaarSearch', { query: { query: 'weather' } })).toMatchObject({
      resources: [{ serviceName: 'skycast', extensions: { bazaar } }],
    });
  });

  it('pages and filters as the reference does', async () => {
    const client = withBazaar(new HTTPFacilitatorClient({ url }));
    const second = await client.extensions.discovery.listResources({ limit: 1, offset: 1 });
    expect(names(second.items as never)).toEqual(['skycast']);
    expect(second.pagination).toEqual({ limit: 1, offset: 1, total: 2 });
    const listed = async (q: string) => names((await get(`/x402/discovery/resources?${q}`)).body.items);
    expect(await listed('scheme=escrow')).toEqual(['skycast']);
    expect(await listed('extensions=bazaar')).toEqual(['skycast']);
    expect(await listed(`payTo=${owner}&network=stellar:local`)).toEqual(['skycast']);
    expect(await listed('scheme=exact')).toEqual([]);
    expect(await listed('type=mcp')).toEqual([]);
  });

  it('searches by meaning, as GET /v1/agents?q= does, in the same item shape', async () => {
    const q = encodeURIComponent('pronóstico del tiempo');
    for (const base of ['', '/x402']) {
      const { status, body } = await get(`${base}/discovery/search?query=${q}&limit=1`);
      expect(status).toBe(200);
      expect(body).toMatchObject({ x402Version: 2, searchMode: 'hybrid', partialResults: false });
      expect(names(body.resources)).toEqual(['skycast']);
      expect(body.resources[0]).toMatchObject({ resource: endpoint, accepts: [{ scheme: 'escrow', amount: '10000' }], extensions: { bazaar } });
    }
    const u = await h.account();
    expect((await u.api(`/v1/agents?q=${q}`)).body[0]).toMatchObject({ service: 'skycast', rails: ['credits', 'mpp-channel', 'escrow'] });
    const both = encodeURIComponent('weather forecast test service echo');
    const first = (await get(`/discovery/search?query=${both}&limit=1`)).body;
    expect(first.pagination).toEqual({ limit: 1, cursor: '1' });
    const next = (await get(`/discovery/search?query=${both}&limit=1&cursor=1`)).body;
    expect(next.pagination).toEqual({ limit: 1, cursor: null });
    expect([...names(first.resources), ...names(next.resources)].sort()).toEqual(['echo', 'skycast']);
    expect(names((await get(`/discovery/search?query=${both}&scheme=escrow`)).body.resources)).toEqual(['skycast']);
  });

  it('shows how each service can be paid (rails), and offers POST /v1/call to MPP clients in GET /openapi.json', async () => {
    const u = await h.account();
    // The manifests the listing read: skycast takes escrow at its endpoint, echo (no escrow configured) nothing directly.
    expect((await u.api('/v1/agents/skycast')).body.rails).toEqual(['credits', 'mpp-channel', 'escrow']);
    expect((await u.api('/v1/agents/echo')).body.rails).toEqual(['credits', 'mpp-channel']);
    const listed = (await u.api('/v1/agents')).body as Array<{ service: string; rails: string[] }>;
    expect(Object.fromEntries(listed.map((s) => [s.service, s.rails]))).toEqual({
      echo: ['credits', 'mpp-channel'],
      skycast: ['credits', 'mpp-channel', 'escrow'],
    });
    // Channel sessions are on (local): draft-payment-discovery-00's offer, in the network's USDC contract.
    const doc = (await get('/openapi.json')).body;
    expect(doc['x-service-info']).toEqual({ categories: ['developer-tools'], docs: { homepage: h.origin, apiReference: `${h.origin}/openapi.json` } });
    expect(doc.paths['/v1/call'].post['x-payment-info']).toEqual({
      offers: [{ intent: 'session', method: 'stellar', amount: null, currency: h.core.network.usdc.contractId, description: expect.any(String) }],
    });
    expect(h.core.network.usdc.contractId).toMatch(/^C[A-Z2-7]{55}$/);
    expect(doc.paths['/v1/call'].post.responses['402'].content).toHaveProperty('application/problem+json');
  });

  it('refuses bad parameters with their message', async () => {
    const client = withBazaar(new HTTPFacilitatorClient({ url: `${url}/x402` }));
    await expect(client.extensions.discovery.listResources({ limit: 0 })).rejects.toThrow(
      'Facilitator listDiscoveryResources failed (400): {"error":"invalid limit (must be an integer from 1 to 500)","code":"BAD_REQUEST"}',
    );
    const cases: Array<[string, string]> = [
      ['/x402/discovery/resources?offset=x', 'invalid offset (must be an integer from 0 to 1000000)'],
      ['/discovery/resources?network=testnet', 'invalid network (a CAIP-2 id such as stellar:testnet)'],
      ['/discovery/resources?q=weather', 'unknown parameter: q'],
      ['/discovery/resources?type=http&type=mcp', 'parameter given more than once: type'],
      ['/x402/discovery/search', 'query required'],
      ['/discovery/search?query=x&cursor=-1', 'invalid cursor (pass the pagination.cursor of the previous page)'],
      ['/discovery/search?query=x&limit=0', 'invalid limit (must be an integer from 1 to 100)'],
    ];
    for (const [path, error] of cases) expect(await get(path), path).toEqual({ status: 400, body: { error, code: 'BAD_REQUEST' } });
  });
});
