import { describe, expect, it } from 'vitest';
import { bazaarListPage, bazaarResource, directPayments, parseBazaarList, type BazaarContext } from '@farebox/discovery';
import { encodeStrKey, randomBytes } from '@farebox/protocol';

// What a stock x402 catalog client reads about one Farebox service (issue 37, item 6).
// Well-formed keys, as the registry and the network config hold them.
const account = () => encodeStrKey('publicKey', randomBytes(32));
const TREASURY = account();
const OWNER = account();
const USDC = { issuer: account(), contractId: encodeStrKey('contract', randomBytes(32)) };
const testnet: BazaarContext = { network: { x402Network: 'stellar:testnet', usdc: USDC }, treasury: TREASURY };
const agent = {
  service: 'skycast',
  pricePerCall: 12_345n,
  endpoint: 'https://skycast.example/api',
  description: 'Weather forecast',
  owner: OWNER,
  createdAt: 1_700_000_000,
};
const bazaar = {
  info: { input: { type: 'http', method: 'POST', bodyType: 'json', body: { city: 'Lima' } }, output: { type: 'json', example: { tempC: 21 } } },
  schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { input: { type: 'object' } }, required: ['input'] },
};

describe('a service as an x402 bazaar resource', () => {
  it('on testnet offers exact: USDC contract, price in base units, paid to the treasury, fees sponsored', () => {
    const r = bazaarResource(agent, testnet);
    expect(r.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset: USDC.contractId,
        amount: '12345',
        payTo: TREASURY,
        maxTimeoutSeconds: 60,
        extra: { areFeesSponsored: true, service: 'skycast' },
      },
    ]);
    expect(r).toMatchObject({
      resource: agent.endpoint,
      type: 'http',
      x402Version: 2,
      lastUpdated: '2023-11-14T22:13:20.000Z',
      description: 'Weather forecast',
    });
    expect(r.extensions).toBeUndefined();
    // The host names the address of each service (the treasury's muxed address for it, on Farebox).
    const named = bazaarResource(agent, { ...testnet, exactPayTo: (service) => `address of ${service}` });
    expect(named.accepts[0]).toMatchObject({ scheme: 'exact', payTo: 'address of skycast' });
  });

  it("offers escrow beside exact when the service's manifest lists it, and carries its bazaar description", () => {
    const r = bazaarResource(agent, testnet, { payments: ['platform', 'escrow', 'exact'], dynamicPricing: true, bazaar });
    expect(r.accepts.map((a) => [a.scheme, a.payTo, a.asset])).toEqual([
      ['exact', TREASURY, USDC.contractId],
      ['escrow', OWNER, `USDC:${USDC.issuer}`],
    ]);
    expect(r.extensions).toEqual({ bazaar });
    expect(r.metadata).toMatchObject({ dynamicPricing: true, input: bazaar.info.input, output: bazaar.info.output, schema: bazaar.schema });
    // A manifest's `bazaar` without the reference's shape is left out.
    expect(bazaarResource(agent, testnet, { payments: [], bazaar: { info: { input: { type: 'ftp' } } } })).not.toHaveProperty('extensions');
  });

  it('without a treasury, off testnet/pubnet, or when the manifest leaves exact out, offers escrow only', () => {
    expect(bazaarResource(agent, { network: testnet.network }).accepts.map((a) => a.scheme)).toEqual(['escrow']);
    expect(bazaarResource(agent, testnet, { payments: ['platform', 'escrow'] }).accepts.map((a) => a.scheme)).toEqual(['escrow']);
    expect(bazaarResource(agent, testnet, { payments: ['platform'] }).accepts).toEqual([]);
    const local = bazaarResource(agent, { network: { x402Network: 'stellar:local', usdc: USDC }, treasury: TREASURY });
    expect(local.accepts).toEqual([
      expect.objectContaining({
        scheme: 'escrow',
        network: 'stellar:local',
        amount: '12345',
        extra: { service: 'skycast', escrow: { platformAddress: TREASURY, platformFee: 5 } },
      }),
    ]);
  });

  it("says which schemes a service takes at its endpoint as its offers do (directPayments: the listings' rails)", () => {
    const cases: Array<[BazaarContext, { payments: string[] } | undefined]> = [
      [testnet, undefined],
      [testnet, { payments: ['platform', 'exact', 'escrow'] }],
      [testnet, { payments: ['platform'] }],
      [{ network: testnet.network }, undefined],
      [{ network: { x402Network: 'stellar:local', usdc: USDC }, treasury: TREASURY }, { payments: ['exact'] }],
    ];
    for (const [ctx, manifest] of cases) {
      const schemes = bazaarResource(agent, ctx, manifest).accepts.map((a) => a.scheme);
      expect(directPayments(ctx, manifest)).toEqual({ exact: schemes.includes('exact'), escrow: schemes.includes('escrow') });
    }
    expect(directPayments(testnet)).toEqual({ exact: true, escrow: false });
  });

  it('filters on an offer and the bazaar extension, then pages', () => {
    const entries = [
      { ...agent, service: 'a', owner: OWNER },
      { ...agent, service: 'b', owner: TREASURY },
      { ...agent, service: 'c', owner: OWNER },
    ];
    const withBazaar = new Set(['c']);
    const toResource = (e: typeof agent) =>
      bazaarResource(e, { network: testnet.network }, { payments: ['escrow'], ...(withBazaar.has(e.service) ? { bazaar } : {}) });
    const page = (q: string) => bazaarListPage(entries, toResource, parseBazaarList(new URLSearchParams(q)));
    expect(page(`payTo=${OWNER}&limit=1&offset=1`)).toMatchObject({ items: [{ serviceName: 'c' }], pagination: { limit: 1, offset: 1, total: 2 } });
    expect(page('extensions=bazaar').items.map((r) => r.serviceName)).toEqual(['c']);
    expect(page('offset=5')).toMatchObject({ items: [], pagination: { limit: 50, offset: 5, total: 3 } });
  });
});
