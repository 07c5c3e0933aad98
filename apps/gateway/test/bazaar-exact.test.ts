import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Keypair } from '@stellar/stellar-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTPFacilitatorClient } from '@x402/core/http';
import { withBazaar } from '@x402/extensions/bazaar';
import { createProvider, type ListeningProvider } from '@farebox/provider';
import { X402_HEADERS, parseAmount } from '@farebox/protocol';
import { createRegistryClient, keypairSigner, servicePayTo } from '@farebox/stellar';
import { startGateway, type RunningGateway } from '../src/index.js';

// Issue 37, item 6, on a devnet standing in for testnet: a service made with
// @farebox/provider offers `exact` (and describes its input and output), and the
// gateway's bazaar lists it with the same offer and description its own 402 carries.
let gw: RunningGateway;
let listening: ListeningProvider;
let endpoint: string;
const discovery = {
  input: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  output: { type: 'object', properties: { tempC: { type: 'number' } }, required: ['tempC'] },
  example: { input: { city: 'Lima' }, output: { tempC: 21 } },
};

beforeAll(async () => {
  gw = await startGateway({
    port: 0,
    network: 'local',
    stellar: { devnetPassphrase: 'testnet' },
    allowLoopbackEndpoints: true,
    dataDir: await mkdtemp(join(tmpdir(), 'farebox-bazaar-exact-')),
    devnetCloseIntervalMs: 'instant',
    devnetInMemory: true,
    logLevel: 'warn',
    env: {},
  });
  const kp = Keypair.random();
  await gw.devnet!.friendbot(kp.publicKey());
  const provider = createProvider({
    service: 'skycast',
    pricePerCall: '0.0012345',
    description: 'Weather forecast for the hub',
    network: 'local',
    devnetPassphrase: 'testnet',
    platform: { publicKey: gw.core.platformPublicKey, url: gw.url },
    wallet: { secret: kp.secret() },
    registry: createRegistryClient(gw.core.network),
    discovery,
    env: {},
  }).serve((payload) => ({ echo: payload }));
  listening = await provider.listen(0, '127.0.0.1');
  endpoint = `${listening.url}/`;
  await createRegistryClient(gw.core.network).register(keypairSigner(kp.secret()), {
    service: 'skycast',
    pricePerCall: parseAmount('0.0012345'),
    endpoint,
    description: 'Weather forecast for the hub',
  });
  await gw.core.mirror.syncOnce();
}, 60_000);

afterAll(async () => {
  await listening?.close();
  await gw?.close();
});

describe('the bazaar on a devnet under the testnet passphrase', () => {
  it("lists a provider's service with the exact offer and bazaar extension of its own 402", async () => {
    // What the service itself answers an unpaid request with (the v2 PAYMENT-REQUIRED header).
    const unpaid = await fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unpaid.status).toBe(402);
    const quote = JSON.parse(Buffer.from(unpaid.headers.get(X402_HEADERS.paymentRequired)!, 'base64').toString('utf8'));
    const exact = quote.accepts.find((a: { scheme: string }) => a.scheme === 'exact');
    expect(exact).toBeDefined();

    const client = withBazaar(new HTTPFacilitatorClient({ url: `${gw.url}/x402` }));
    const { items } = await client.extensions.discovery.listResources({ type: 'http' });
    expect(items).toHaveLength(1);
    const listed = items[0]!;
    expect(listed.resource).toBe(endpoint);
    expect(listed.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'stellar:testnet',
        asset: gw.core.network.usdc.contractId,
        amount: '12345',
        payTo: servicePayTo(gw.core.treasuryAddress, 'skycast'),
        maxTimeoutSeconds: 60,
        extra: { areFeesSponsored: true, service: 'skycast' },
      },
    ]);
    // The same offer the 402 makes (its extra may say more).
    expect(exact).toMatchObject({ ...listed.accepts[0], extra: expect.objectContaining(listed.accepts[0]!.extra) });
    expect((listed as { extensions?: unknown }).extensions).toEqual({ bazaar: quote.extensions.bazaar });
    expect(listed.metadata).toMatchObject({ description: 'Weather forecast for the hub', price: '0.0012345', input: { type: 'http', body: { city: 'Lima' } } });
    // Filters on the offer.
    const exactOnly = await fetch(
      `${gw.url}/discovery/resources?scheme=exact&network=stellar:testnet&payTo=${servicePayTo(gw.core.treasuryAddress, 'skycast')}`,
    );
    expect(((await exactOnly.json()) as { pagination: { total: number } }).pagination.total).toBe(1);
  });
});
