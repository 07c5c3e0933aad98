import { CERTIFICATE_HEADER, createCertificateSigner, encodeStrKey, parsePaymentRequired, randomBytes, signCallCertificate } from '@farebox/protocol';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWordCountService } from '../src/service.js';

const secret = () => encodeStrKey('secretSeed', randomBytes(32));
let devnet: Devnet;
let platform: Awaited<ReturnType<typeof createCertificateSigner>>;
let service: ReturnType<typeof createWordCountService>;
let url: string;

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  platform = await createCertificateSigner(secret());
  service = createWordCountService({ FAREBOX_DEVNET_URL: devnet.url, FAREBOX_PLATFORM_PUBLIC_KEY: platform.publicKey, AGENT_WALLET_SECRET: secret() });
  url = (await service.listen(0, '127.0.0.1')).url;
  // Registers "word-count" on the devnet: paid calls pass the registry check.
  await service.bootstrap();
});

afterAll(async () => {
  await service?.close();
  await devnet?.close();
});

async function quote(body: string) {
  const res = await fetch(`${url}/`, { method: 'POST', body });
  return { status: res.status, quote: res.status === 402 ? parsePaymentRequired({ headers: res.headers, body: await res.json() }) : await res.json() };
}

describe('word-count example', () => {
  it('prices per word above the floor', async () => {
    const short = await quote(JSON.stringify({ text: 'three little words' }));
    expect(short.quote.price).toBe(10_000n);
    const long = await quote(JSON.stringify({ text: Array.from({ length: 25 }, (_, i) => `w${i}`).join(' ') }));
    expect(long.quote.price).toBe(25_000n);
  });

  it('answers 400 for a payload without text', async () => {
    expect(await quote('{"words": 3}')).toEqual({ status: 400, quote: { error: 'could not price this payload: text required (a string)' } });
  });

  it('counts the words of a platform-signed call paid at the quoted price, and quotes again when underpaid', async () => {
    const text = Array.from({ length: 20 }, () => 'word').join(' ');
    const body = JSON.stringify({ text });
    const sign = (amount: bigint) => signCallCertificate({ service: 'word-count', body, amount, callId: `c_${amount}` }, platform);
    const under = await fetch(`${url}/`, { method: 'POST', body, headers: { [CERTIFICATE_HEADER]: (await sign(10_000n)).header } });
    expect(under.status).toBe(402);
    const paid = await fetch(`${url}/`, { method: 'POST', body, headers: { [CERTIFICATE_HEADER]: (await sign(20_000n)).header } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ words: 20, characters: text.length, lines: 1 });
  });
});
