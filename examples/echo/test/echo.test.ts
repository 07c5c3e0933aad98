import { CERTIFICATE_HEADER, createCertificateSigner, encodeStrKey, randomBytes, signCallCertificate } from '@farebox/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEchoService } from '../src/service.js';

const secret = () => encodeStrKey('secretSeed', randomBytes(32));
let platform: Awaited<ReturnType<typeof createCertificateSigner>>;
let service: ReturnType<typeof createEchoService>;
let url: string;

beforeAll(async () => {
  platform = await createCertificateSigner(secret());
  service = createEchoService({ FAREBOX_PLATFORM_PUBLIC_KEY: platform.publicKey, AGENT_WALLET_SECRET: secret() });
  url = (await service.listen(0, '127.0.0.1')).url;
});

afterAll(() => service.close());

describe('echo example', () => {
  it('quotes 0.001 USDC to an unpaid caller and echoes the payload of a platform-signed call', async () => {
    const body = JSON.stringify({ hello: 'farebox' });
    const unpaid = await fetch(`${url}/`, { method: 'POST', body });
    expect(unpaid.status).toBe(402);
    expect(((await unpaid.json()) as { accepts: Array<{ maxAmountRequired: string }> }).accepts[0]?.maxAmountRequired).toBe('10000');
    const { header } = await signCallCertificate({ service: 'echo', body, amount: 10_000n, callId: 'c_1' }, platform);
    const paid = await fetch(`${url}/`, { method: 'POST', body, headers: { [CERTIFICATE_HEADER]: header } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toMatchObject({ echo: { hello: 'farebox' } });
  });
});
