import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toNodeListener } from '../src/index.js';
import { startHttpStack, type HttpStack } from './kit.js';

async function publisher(h: HttpStack) {
  const pub = await h.account();
  expect((await pub.api('/v1/publisher/activate', { body: { name: 'Edge Co' } })).status).toBe(200);
  return pub;
}

describe('a gateway without FAREBOX_ALLOW_LOOPBACK_ENDPOINTS (the default)', () => {
  let h: HttpStack;
  beforeAll(async () => {
    h = await startHttpStack({ gateway: { allowLoopbackEndpoints: false } });
  }, 60_000);
  afterAll(() => h?.close());

  it('refuses every loopback and IPv4-carrying IPv6 endpoint, and registers nothing', async () => {
    const pub = await publisher(h);
    const svc = await h.serve('edge-svc', '0.01', (await pub.api('/v1/me')).body.custodial_wallet);
    const port = new URL(svc.endpoint).port;
    const loopbackForms = [
      '127.0.0.1',
      'localhost',
      '[::1]',
      '2130706433',
      '0177.0.0.1',
      '127.1',
      '[::7f00:1]',
      '[::127.0.0.1]',
      '[::ffff:127.0.0.1]',
      '[::ffff:0:7f00:1]',
      '[64:ff9b::7f00:1]',
      '[64:ff9b:1::7f00:1]',
      '[64:ff9b:1:0:7f:0:100:0]',
      '[2002:7f00:1::]',
      '[2001:0:7f00:1::f7f7:f7f7]',
      '[2001:0:808:808::80ff:fffe]',
    ];
    const metadataForms = [
      '169.254.169.254',
      '[::a9fe:a9fe]',
      '[::169.254.169.254]',
      '[::ffff:a9fe:a9fe]',
      '[::ffff:0:a9fe:a9fe]',
      '[64:ff9b::169.254.169.254]',
      '[64:ff9b:1::a9fe:a9fe]',
      '[64:ff9b:1:a9fe:a9:fe00:808:808]',
      '[2002:a9fe:a9fe::1]',
      '[2001:0:a9fe:a9fe::f7f7:f7f7]',
      '[2001:0:808:808::5601:5601]',
    ];
    for (const host of [...loopbackForms, ...metadataForms]) {
      for (const scheme of ['http', 'https']) {
        const r = await pub.api('/v1/agents', {
          body: { service: 'edge-svc', pricePerCallLamports: 1000, endpoint: `${scheme}://${host}:${port}/`, description: 'loopback' },
        });
        expect(r.status, `${scheme}://${host}`).toBe(400);
        expect(r.body.error).toMatch(/^endpoint (resolves to a private or reserved address|must use https|host does not resolve)$/);
      }
    }
    expect((await pub.api('/v1/agents/mine')).body).toEqual([]);
  });

  it('does not call a loopback endpoint registered on chain by someone else: refunded, nothing reaches it', async () => {
    let reached = 0;
    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => {
      reached++;
      res.end('{}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    await h.registerRaw('planted', `http://127.0.0.1:${port}/`, '0.01');
    const u = await h.account();
    const before = (await u.api('/v1/balance')).body.balance_base_units;
    const r = await u.api('/v1/call', { body: { service: 'planted', payload: {} } });
    expect(r.status).toBe(500);
    expect(r.body.error).toBe('service endpoint refused: endpoint resolves to a private or reserved address; the 0.01 USD charge was refunded to your credits');
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(before);
    expect(reached).toBe(0);
    server.close();
  });
});

describe('a gateway that allows loopback endpoints (the local stack)', () => {
  let h: HttpStack;
  let own: string;
  // The handler on node:http at the port the gateway is configured with: where a planted endpoint would reach it.
  const server = createServer();
  beforeAll(async () => {
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    own = String((server.address() as AddressInfo).port);
    h = await startHttpStack({ gateway: { port: Number(own) } });
    server.on('request', toNodeListener(h.handler));
  }, 60_000);
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await h?.close();
  });

  it('still refuses the gateway itself, at registration and at call time', async () => {
    const pub = await publisher(h);
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '127.1']) {
      const r = await pub.api('/v1/agents', {
        body: { service: 'selfie', pricePerCallLamports: 1000, endpoint: `http://${host}:${own}/auth/signup`, description: 'the gateway' },
      });
      expect(r, host).toMatchObject({ status: 400, body: { error: 'endpoint is the gateway itself' } });
    }
    // Planted on chain directly: the call is refused and refunded, and no account is made through the gateway's own API.
    await h.registerRaw('selfie', `http://127.0.0.1:${own}/auth/signup`, '0.01');
    const u = await h.account();
    const before = (await u.api('/v1/balance')).body.balance_base_units;
    const accounts = (await u.api('/v1/platform/stats')).body.accounts;
    const r = await u.api('/v1/call', { body: { service: 'selfie', payload: { email: 'planted@example.com', password: 'planted password' } } });
    expect(r).toMatchObject({
      status: 500,
      body: { error: 'service endpoint refused: endpoint is the gateway itself; the 0.01 USD charge was refunded to your credits' },
    });
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(before);
    expect((await u.api('/v1/platform/stats')).body.accounts).toBe(accounts);
  });
});
