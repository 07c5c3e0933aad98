// Which certificate a service gets (gateway-core/src/certificates.ts): v1
// until its answers say it verifies v2; then the calls of one turn share one
// signature over their Merkle root. A service that stops verifying v2 gets
// its call again with a v1 certificate, and the caller pays once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CERTIFICATE_HEADER, CERTIFICATE_VERSIONS_HEADER, verifyCallCertificate } from '@farebox/protocol';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

let h: HttpStack;
let alice: HttpAccount;
let service: Server;
/** What the service verifies: 'v1' answers 401 to a v2 certificate, as a provider from before v2 does. */
let verifies: 'v1' | 'v1, v2' = 'v1, v2';
/** Answer 401 to every call (while still announcing what it verifies). */
let refuseAll = false;
const seen: Array<{ header: string; ok: boolean }> = [];

beforeAll(async () => {
  h = await startHttpStack();
  alice = await h.account();
  service = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const header = String(req.headers[CERTIFICATE_HEADER]);
      const verdict = await verifyCallCertificate(header, {
        body: Buffer.concat(chunks),
        service: 'versioned',
        platformPublicKey: h.core.platformPublicKey,
      });
      const ok = verdict.ok && !refuseAll && (verifies === 'v1, v2' || verdict.certificate.version === 1);
      seen.push({ header, ok });
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (verifies === 'v1, v2') headers[CERTIFICATE_VERSIONS_HEADER] = verifies;
      if (ok) res.writeHead(200, headers).end('{"served":true}');
      else res.writeHead(401, headers).end(JSON.stringify({ error: verdict.ok ? 'malformed certificate' : verdict.message }));
    });
  });
  await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
  await h.registerRaw('versioned', `http://127.0.0.1:${(service.address() as AddressInfo).port}/`, '0.01');
}, 120_000);

afterAll(async () => {
  await new Promise((r) => service.close(r));
  await h?.close();
});

const call = () => alice.api('/v1/call', { body: { service: 'versioned', payload: { q: 1 } } });
const balance = async () => BigInt((await alice.api('/v1/balance')).body.balance_base_units as string);

it('sends v1 until the service says it verifies v2, then batch-signs the calls of one turn under one signature', async () => {
  expect((await call()).status).toBe(200);
  expect(seen[0]!.header.startsWith('v1.')).toBe(true);

  const before = await balance();
  const burst = await Promise.all(Array.from({ length: 12 }, call));
  expect(burst.map((r) => r.status)).toEqual(Array(12).fill(200));
  const sent = seen.slice(1);
  expect(sent).toHaveLength(12);
  expect(sent.every((s) => s.ok && s.header.startsWith('v2.'))).toBe(true);
  // Fewer signatures than calls: calls that arrived in one turn share one.
  const signatures = new Set(sent.map((s) => s.header.split('.')[3]));
  expect(signatures.size).toBeLessThan(12);
  expect(before - (await balance())).toBe(12n * 100_000n);
});

it('calls again with a v1 certificate when the service no longer verifies v2, and charges once', async () => {
  expect((await call()).status).toBe(200);
  verifies = 'v1';
  seen.length = 0;
  const before = await balance();
  const r = await call();
  expect(r.status).toBe(200);
  expect(r.body.result).toEqual({ served: true });
  expect(seen.map((s) => [s.header.slice(0, 3), s.ok])).toEqual([
    ['v2.', false],
    ['v1.', true],
  ]);
  expect(before - (await balance())).toBe(100_000n);
  // And v1 from then on.
  expect((await call()).status).toBe(200);
  expect(seen.slice(2).map((s) => s.header.slice(0, 3))).toEqual(['v1.']);
});

it('refunds a v2 call the service refuses while it says it verifies v2 (no second try)', async () => {
  verifies = 'v1, v2';
  expect((await call()).status).toBe(200);
  refuseAll = true;
  seen.length = 0;
  const before = await balance();
  const r = await call();
  refuseAll = false;
  expect(r.status).toBe(500);
  expect(r.body.error).toBe('service error 401: malformed certificate; the 0.01 USD charge was refunded to your credits');
  expect(seen.map((s) => s.header.slice(0, 3))).toEqual(['v2.']);
  expect(await balance()).toBe(before);
});
