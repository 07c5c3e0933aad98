import { CERTIFICATE_HEADER, createCertificateSigner, encodeStrKey, randomBytes, signCallCertificate } from '@farebox/protocol';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { MemoryCursorStore, createCatalogMirror, createRegistryClient, type CatalogMirror } from '@farebox/stellar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEchoService } from '../src/service.js';
import { eventually } from '@farebox/test-kit';

const secret = () => encodeStrKey('secretSeed', randomBytes(32));
let devnet: Devnet;
let mirror: CatalogMirror;
let platform: Awaited<ReturnType<typeof createCertificateSigner>>;
let service: ReturnType<typeof createEchoService>;
let url: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  platform = await createCertificateSigner(secret());
  service = createEchoService({ FAREBOX_DEVNET_URL: devnet.url, FAREBOX_PLATFORM_PUBLIC_KEY: platform.publicKey, AGENT_WALLET_SECRET: secret() });
  url = (await service.listen(0, '127.0.0.1')).url;
  // An indexer following the registry's events, as the discovery backend runs one.
  mirror = createCatalogMirror({ registry: createRegistryClient(devnet.network), cursorStore: new MemoryCursorStore(), pollIntervalMs: 200 });
  await mirror.start();
  await mirror.ready();
});

afterAll(async () => {
  await mirror?.stop();
  await service?.close();
  await devnet?.close();
});

describe('echo example', () => {
  it('bootstraps itself into the devnet and appears in a catalog mirror that follows the registry', async () => {
    expect(mirror.get('echo')).toBeUndefined();
    const result = await service.bootstrap();
    expect(result).toMatchObject({ action: 'registered', service: 'echo', owner: service.config.ownerWallet, endpoint: `${url}/` });
    // The mirror's own polling picks it up (no syncOnce); how soon is measured by the bench, not asserted here.
    const listed = await eventually('the mirror lists echo', () => mirror.get('echo'));
    expect(listed).toMatchObject({ owner: service.config.ownerWallet, pricePerCall: 10_000n, endpoint: `${url}/`, description: service.config.description });
  });

  it('quotes 0.001 USDC to an unpaid caller and echoes the payload of a platform-signed call once registered', async () => {
    await service.bootstrap();
    const body = JSON.stringify({ hello: 'farebox' });
    const unpaid = await fetch(`${url}/`, { method: 'POST', body });
    expect(unpaid.status).toBe(402);
    // Escrow is off: no offer to pay directly, the price at the top level.
    expect(await unpaid.json()).toMatchObject({
      error: 'echo takes no direct payment: it is paid through the gateway only',
      accepts: [],
      extra: { priceBaseUnits: '10000', payments: ['platform'] },
    });
    const { header } = await signCallCertificate({ service: 'echo', body, amount: 10_000n, callId: 'c_1' }, platform);
    const paid = await fetch(`${url}/`, { method: 'POST', body, headers: { [CERTIFICATE_HEADER]: header } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ echo: { hello: 'farebox' } });
  });
});
