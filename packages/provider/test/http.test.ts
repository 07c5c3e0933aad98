import { mkdtemp } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CERTIFICATE_HEADER,
  CERTIFICATE_VERSIONS_HEADER,
  ManifestSchema,
  base64Decode,
  base64UrlEncode,
  encodePaymentHeader,
  encodeStrKey,
  parsePaymentRequired,
  randomBytes,
  signCallCertificateBatch,
} from '@farebox/protocol';
import { LOCAL_REGISTRY_CONTRACT_ID } from '@farebox/stellar';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProvider, type CallContext, type Provider } from '../src/index.js';
import { baseOptions, certificateFor, newSigner, nowSeconds, ownerWallet, post, startProvider, useDevnet, type Signer } from './helpers.js';

let platform: Signer;
let stranger: Signer;
const started: Provider[] = [];
useDevnet();

beforeAll(async () => {
  platform = await newSigner();
  stranger = await newSigner();
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((p) => p.close()));
});

async function start(...args: Parameters<typeof startProvider>) {
  const s = await startProvider(...args);
  started.push(s.provider);
  return s;
}

const body = JSON.stringify({ text: 'hello world' });

describe('platform-signed calls over HTTP', () => {
  it('serves a call carrying a valid certificate and hands the handler the payload and the payment', async () => {
    const seen: CallContext[] = [];
    const { url } = await start(baseOptions(platform), (payload, ctx) => {
      seen.push(ctx);
      return { echo: payload };
    });
    const res = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ echo: { text: 'hello world' } });
    expect(seen[0]).toMatchObject({ paidWith: 'platform', amount: 10_000n, price: 10_000n });
  });

  it('serves batch-signed (v2) certificates, each once, and says on every answer that it verifies v1 and v2', async () => {
    const calls: unknown[] = [];
    const { url } = await start(baseOptions(platform), (p) => {
      calls.push(p);
      return { ok: true };
    });
    const bodies = ['{"text":"a"}', '{"text":"b"}', '{"text":"c"}'];
    const signed = await signCallCertificateBatch(
      bodies.map((b, i) => ({ service: 'echo', body: b, amount: 10_000n, callId: `c_batch_${i}` })),
      platform,
    );
    for (const [i, c] of signed.entries()) {
      const res = await post(url, bodies[i]!, { [CERTIFICATE_HEADER]: c.header });
      expect(res.status).toBe(200);
      expect(res.headers.get(CERTIFICATE_VERSIONS_HEADER)).toBe('v1, v2');
    }
    const swapped = await post(url, bodies[0]!, { [CERTIFICATE_HEADER]: signed[1]!.header });
    expect(swapped).toMatchObject({ status: 401, json: { error: 'certificate does not match the request body' } });
    expect(swapped.headers.get(CERTIFICATE_VERSIONS_HEADER)).toBe('v1, v2');
    const replay = await post(url, bodies[2]!, { [CERTIFICATE_HEADER]: signed[2]!.header });
    expect(replay).toMatchObject({ status: 401, json: { error: 'certificate already used (replay)' } });
    expect(calls).toEqual(bodies.map((b) => JSON.parse(b)));
  });

  it('refuses an expired certificate with 401', async () => {
    const { url } = await start(baseOptions(platform));
    const header = await certificateFor(platform, body, { now: nowSeconds() - 60 - 130, ttlSeconds: 60 });
    const res = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(res).toMatchObject({ status: 401, json: { error: 'certificate expired' } });
  });

  it('refuses a certificate issued further in the future than the clock tolerance', async () => {
    const { url } = await start(baseOptions(platform));
    const header = await certificateFor(platform, body, { now: nowSeconds() + 200 });
    const res = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(res).toMatchObject({ status: 401, json: { error: 'certificate issued in the future (check the host clock)' } });
  });

  it('serves a certificate once and refuses it when replayed', async () => {
    const calls: unknown[] = [];
    const { url } = await start(baseOptions(platform), (p) => calls.push(p));
    const header = await certificateFor(platform, body);
    expect((await post(url, body, { [CERTIFICATE_HEADER]: header })).status).toBe(200);
    const replay = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(replay).toMatchObject({ status: 401, json: { error: 'certificate already used (replay)' } });
    expect(calls).toHaveLength(1);
  });

  it('still refuses a replay after the certificate expired while it is inside the clock tolerance', async () => {
    let clock = Date.now();
    const { url } = await start(baseOptions(platform, { now: () => clock }));
    const issuedAt = Math.floor(clock / 1000);
    const header = await certificateFor(platform, body, { now: issuedAt, ttlSeconds: 60 });
    expect((await post(url, body, { [CERTIFICATE_HEADER]: header })).status).toBe(200);
    clock += 150_000; // expired 90 s ago: still acceptable under the 120 s tolerance
    const replay = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(replay).toMatchObject({ status: 401, json: { error: 'certificate already used (replay)' } });
    clock += 40_000; // past expiry + tolerance: refused as expired, the nonce may be forgotten
    const late = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(late).toMatchObject({ status: 401, json: { error: 'certificate expired' } });
  });

  it('refuses a certificate made for another service', async () => {
    const { url } = await start(baseOptions(platform));
    const res = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body, { service: 'translate' }) });
    expect(res).toMatchObject({ status: 401, json: { error: 'certificate made for another service' } });
  });

  it('refuses a payload changed by one byte', async () => {
    const { url } = await start(baseOptions(platform));
    const header = await certificateFor(platform, body);
    const changed = body.replace('world', 'worle');
    expect(changed.length).toBe(body.length);
    const res = await post(url, changed, { [CERTIFICATE_HEADER]: header });
    expect(res).toMatchObject({ status: 401, json: { error: 'certificate does not match the request body' } });
  });

  it('refuses a certificate signed by another key', async () => {
    const { url } = await start(baseOptions(platform));
    const res = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(stranger, body) });
    expect(res).toMatchObject({ status: 401, json: { error: 'certificate not issued by the platform' } });
  });

  it('refuses a certificate naming the platform as issuer but signed by another key', async () => {
    const { url } = await start(baseOptions(platform));
    const [, claims, signature] = (await certificateFor(stranger, body)).split('.') as [string, string, string];
    const decoded = JSON.parse(new TextDecoder().decode(base64Decode(claims)!)) as Record<string, unknown>;
    const forged = base64UrlEncode(new TextEncoder().encode(JSON.stringify({ ...decoded, iss: platform.publicKey })));
    const res = await post(url, body, { [CERTIFICATE_HEADER]: `v1.${forged}.${signature}` });
    expect(res).toMatchObject({ status: 401, json: { error: 'invalid certificate signature' } });
  });

  it.each([
    ['garbage', 'not-a-certificate'],
    ['two segments', 'v1.abc'],
    ['wrong version', 'v9.a.b'],
    ['empty', ''],
  ])('refuses a malformed certificate header (%s)', async (_label, header) => {
    const { url } = await start(baseOptions(platform));
    const res = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(res).toMatchObject({ status: 401, json: { error: 'malformed certificate' } });
  });

  it('answers 402 with the quote when the certificate amount is below the dynamic price of this payload', async () => {
    const { url } = await start(
      baseOptions(platform, { priceFn: (p) => (p as { text: string }).text.split(' ').length * 0.01, pricingNote: '0.01 USDC per word' }),
    );
    const header = await certificateFor(platform, body, { amount: 150_000n }); // 0.015 < 2 words x 0.01
    const res = await post(url, body, { [CERTIFICATE_HEADER]: header });
    expect(res.status).toBe(402);
    expect(res.json?.error).toBe("certificate amount 0.015 USDC is below this payload's price 0.02 USDC");
    const quote = parsePaymentRequired({ headers: res.headers, body: res.json });
    expect(quote).toMatchObject({ accepts: [], price: 200_000n, extra: { service: 'echo', priceBaseUnits: '200000', payments: ['platform'] } });
    const paid = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body, { amount: 200_000n }) });
    expect(paid.status).toBe(200);
  });

  it('keeps answering signed calls when the unpaid quote rate limit is exhausted', async () => {
    const { url } = await start(baseOptions(platform, { rateLimitPerMinute: 3 }));
    for (let i = 0; i < 3; i++) expect((await post(url, body)).status).toBe(402);
    const limited = await post(url, body);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.json?.error).toMatch(/too many unpaid requests/);
    for (let i = 0; i < 5; i++) {
      const signed = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
      expect(signed.status).toBe(200);
    }
    expect((await post(url, body)).status).toBe(429);
  });

  it('answers 500 with the error when the handler throws', async () => {
    const { url } = await start(baseOptions(platform), () => {
      throw new Error('upstream model unavailable');
    });
    const res = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
    expect(res).toMatchObject({ status: 500, json: { error: 'upstream model unavailable' } });
  });

  it('never runs the handler for an unpaid request', async () => {
    let ran = false;
    const { url } = await start(baseOptions(platform), () => {
      ran = true;
    });
    expect((await post(url, body)).status).toBe(402);
    expect(ran).toBe(false);
  });
});

describe('quotes, bodies and routes over HTTP', () => {
  it('answers an unpaid request with 402 and an x402 quote naming the owner, the price and a quote id', async () => {
    const servedStorePath = join(await mkdtemp(join(tmpdir(), 'farebox-provider-')), 'served.json');
    const platformAddress = (await newSigner()).publicKey;
    const { url } = await start(baseOptions(platform, { pricingNote: 'flat', trustlessWork: { apiKey: 'tw_key', platformAddress }, servedStorePath }));
    const res = await post(url, body);
    expect(res.status).toBe(402);
    expect(res.json).toMatchObject({ x402Version: 1, error: 'payment required' });
    const quote = parsePaymentRequired({ headers: res.headers, body: res.json });
    expect(quote.version).toBe(2);
    const [accept] = quote.accepts;
    expect(accept).toMatchObject({ scheme: 'escrow', amount: 10_000n, payTo: ownerWallet, network: 'stellar:local', resource: url });
    expect(accept?.asset).toMatch(/^USDC:G[A-Z2-7]{55}$/);
    expect(accept?.extra).toMatchObject({ service: 'echo', priceBaseUnits: '10000', pricingNote: 'flat', platformPublicKey: platform.publicKey });
    expect(String(accept?.extra?.quoteId)).toMatch(/^q_/);
    expect(quote.accepts).toHaveLength(1);
  });

  it('offers no escrow while escrow is off: 402 with empty accepts, the price at the top level, and the manifest says the same', async () => {
    const { base, url } = await start(baseOptions(platform, { pricingNote: 'flat' }));
    const res = await post(url, body);
    expect(res.status).toBe(402);
    expect(res.json).toEqual({
      x402Version: 1,
      error: 'echo takes no direct payment: it is paid through the gateway only',
      accepts: [],
      extra: { service: 'echo', priceBaseUnits: '10000', price: '0.001', payments: ['platform'], pricingNote: 'flat', platformPublicKey: platform.publicKey },
    });
    const quote = parsePaymentRequired({ headers: res.headers, body: res.json });
    expect(quote).toMatchObject({ version: 2, accepts: [], price: 10_000n, error: 'echo takes no direct payment: it is paid through the gateway only' });
    const manifest = ManifestSchema.parse(await (await fetch(`${base}/manifest`)).json());
    expect(manifest.payments).toEqual(['platform']);
  });

  it('quotes max(priceFn(payload), pricePerCall)', async () => {
    const { url } = await start(baseOptions(platform, { priceFn: (p) => (p as { n: number }).n }));
    const cheap = await post(url, JSON.stringify({ n: 0.0000001 }));
    const dear = await post(url, JSON.stringify({ n: '0.5' }));
    expect((cheap.json?.extra as { priceBaseUnits: string } | undefined)?.priceBaseUnits).toBe('10000');
    expect((dear.json?.extra as { priceBaseUnits: string } | undefined)?.priceBaseUnits).toBe('5000000');
  });

  it('answers 400 when priceFn cannot price the payload', async () => {
    const { url } = await start(
      baseOptions(platform, {
        priceFn: (p) => {
          if (typeof (p as { text?: unknown }).text !== 'string') throw new Error('text required');
          return 0.01;
        },
      }),
    );
    expect(await post(url, '{}')).toMatchObject({ status: 400, json: { error: 'could not price this payload: text required' } });
  });

  it('answers 400 for a body that is not JSON', async () => {
    const { url } = await start(baseOptions(platform));
    expect(await post(url, '{"text":')).toMatchObject({ status: 400, json: { error: 'invalid JSON body' } });
    const bad = '{"text":';
    expect(await post(url, bad, { [CERTIFICATE_HEADER]: await certificateFor(platform, bad) })).toMatchObject({ status: 400 });
  });

  it('answers 413 for a body over bodyLimit declared by Content-Length', async () => {
    const { url } = await start(baseOptions(platform, { bodyLimit: '1kb' }));
    const big = JSON.stringify({ text: 'x'.repeat(2000) });
    expect(await post(url, big)).toMatchObject({ status: 413, json: { error: 'request body too large (limit 1kb)' } });
  });

  it('answers 413 for a chunked body that grows past bodyLimit without a Content-Length', async () => {
    const { url } = await start(baseOptions(platform, { bodyLimit: '1kb' }));
    const result = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.write('{"text":"');
      for (let i = 0; i < 4; i++) req.write('y'.repeat(512));
      req.end('"}');
    });
    expect(result.status).toBe(413);
    expect(JSON.parse(result.text)).toEqual({ error: 'request body too large (limit 1kb)' });
  });

  it('answers 413 from handle() when the raw body given by a host is over bodyLimit', async () => {
    const provider = createProvider(baseOptions(platform, { bodyLimit: 100 })).serve(() => 'ok');
    const res = await provider.handle({ rawBody: 'z'.repeat(101), headers: {}, ip: '10.0.0.1' });
    expect(res).toMatchObject({ status: 413, body: { error: 'request body too large (limit 100b)' } });
  });

  it('serves /manifest with the fields callers cross-check', async () => {
    const { base, url } = await start(baseOptions(platform, { priceFn: () => 0.002, pricingNote: 'per call' }));
    const res = await fetch(`${base}/manifest`);
    expect(res.status).toBe(200);
    const manifest = ManifestSchema.parse(await res.json());
    expect(manifest).toMatchObject({
      service: 'echo',
      ownerWallet,
      pricePerCall: 0.001,
      priceBaseUnits: '10000',
      pricingNote: 'per call',
      description: 'Echoes the JSON payload back.',
      dynamicPricing: true,
      payments: ['platform'],
      network: 'local',
      platformPublicKey: platform.publicKey,
      endpoint: url,
    });
    expect(manifest.contractId).toBe(LOCAL_REGISTRY_CONTRACT_ID);
  });

  it('serves /health and answers 404 for other paths and 405 for other methods on the paid route', async () => {
    const { base, url } = await start(baseOptions(platform));
    expect(await (await fetch(`${base}/health`)).json()).toMatchObject({ status: 'ok', service: 'echo', verified: true });
    expect((await fetch(`${base}/nope`, { method: 'POST', body: '{}' })).status).toBe(404);
    const get = await fetch(url);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });

  it('serves the paid route on the path of the configured endpoint, and the manifest beside it', async () => {
    const { base } = await start(baseOptions(platform, { endpoint: 'http://127.0.0.1:9/api/echo' }));
    expect((await post(`${base}/api/echo`, body)).status).toBe(402);
    expect((await post(`${base}/`, body)).status).toBe(404);
    expect(((await (await fetch(`${base}/api/echo/manifest`)).json()) as { endpoint: string }).endpoint).toBe('http://127.0.0.1:9/api/echo');
  });
});

describe('escrow payments', () => {
  const escrowId = encodeStrKey('contract', randomBytes(32));

  it('refuses an escrow payment with 402 and the quote when escrow is disabled', async () => {
    const { url } = await start(baseOptions(platform));
    const res = await post(url, body, { 'x-payment': encodePaymentHeader({ escrowId, network: 'stellar:local' }) });
    expect(res.status).toBe(402);
    expect(res.json).toMatchObject({
      error: 'escrow payments are disabled for this service',
      accepts: [],
      extra: { priceBaseUnits: '10000', payments: ['platform'] },
    });
    const v2 = await post(url, body, { 'payment-signature': encodePaymentHeader({ escrowId, network: 'stellar:local' }, 2) });
    expect(v2.json?.error).toBe('escrow payments are disabled for this service');
  });

  it('says plainly that escrow payments cannot be verified when escrow is on but the owner key to release them is missing, and offers no escrow', async () => {
    const platformAddress = (await newSigner()).publicKey;
    const { base, url } = await start(baseOptions(platform, { wallet: {}, ownerWallet, trustlessWork: { apiKey: 'tw_key', platformAddress } }));
    const bad = await post(url, body, { 'x-payment': 'not-an-escrow' });
    expect(bad.status).toBe(402);
    expect(bad.json?.error).toBe('payment header is neither an escrow id nor an x402 envelope');
    const res = await post(url, body, { 'x-payment': escrowId });
    expect(res.status).toBe(503);
    expect(res.json?.error).toMatch(/no escrowVerifier/);
    // It could not release an escrow, so it does not ask for one.
    const quote = await post(url, body);
    expect(quote.json).toMatchObject({ error: 'echo takes no direct payment: it is paid through the gateway only', accepts: [] });
    expect(ManifestSchema.parse(await (await fetch(`${base}/manifest`)).json()).payments).toEqual(['platform']);
  });

  it('refuses platform-signed calls with 401 when no platform key is configured', async () => {
    const platformAddress = (await newSigner()).publicKey;
    const { url } = await start(baseOptions(platform, { platform: {}, trustlessWork: { apiKey: 'tw_key', platformAddress } }));
    const res = await post(url, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
    expect(res.status).toBe(401);
    expect(res.json?.error).toMatch(/no platform public key/);
  });
});
