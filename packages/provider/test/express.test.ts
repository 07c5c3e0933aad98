import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CERTIFICATE_HEADER } from '@farebox/protocol';
import express from 'express';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createProvider } from '../src/index.js';
import { baseOptions, certificateFor, newSigner, post, useDevnet, type Signer } from './helpers.js';

let platform: Signer;
const servers: Server[] = [];
useDevnet();

beforeAll(async () => {
  platform = await newSigner();
});

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(app: express.Express): Promise<string> {
  const server = app.listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((r) => server.once('listening', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const body = JSON.stringify({ q: 'ping' });

describe('express adapter', () => {
  it('serves a platform-signed call and leaves other routes to the app', async () => {
    const provider = createProvider(baseOptions(platform, { endpoint: 'http://127.0.0.1:9/paid' })).serve((p) => ({ got: p }));
    const app = express();
    app.use(provider.express());
    app.get('/other', (_req, res) => {
      res.json({ other: true });
    });
    const base = await serve(app);
    const ok = await post(`${base}/paid`, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
    expect(ok).toMatchObject({ status: 200, json: { got: { q: 'ping' } } });
    expect(await (await fetch(`${base}/other`)).json()).toEqual({ other: true });
    expect((await fetch(`${base}/manifest`)).status).toBe(200);
    expect((await fetch(`${base}/paid/health`)).status).toBe(200);
  });

  it('answers 402 with a quote, 413 for an oversize body and 401 for a bad certificate', async () => {
    const provider = createProvider(baseOptions(platform, { bodyLimit: '2kb' })).serve(() => null);
    const app = express();
    app.use(provider.express());
    const base = await serve(app);
    const unpaid = await post(`${base}/`, body);
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('payment-required')).toBeTruthy();
    expect((await post(`${base}/`, 'x'.repeat(4000))).status).toBe(413);
    expect((await post(`${base}/`, body, { [CERTIFICATE_HEADER]: 'v1.x.y' })).status).toBe(401);
  });

  it('works when mounted under a path and behind express.raw()', async () => {
    const provider = createProvider(baseOptions(platform)).serve(() => 'served');
    const app = express();
    app.use('/svc', express.raw({ type: '*/*' }), provider.express());
    const base = await serve(app);
    const res = await post(`${base}/svc`, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
    expect(res).toMatchObject({ status: 200, json: 'served' });
  });

  it('explains the mounting order when express.json() consumed the raw bytes before a signed call', async () => {
    const provider = createProvider(baseOptions(platform)).serve(() => 'served');
    const app = express();
    app.use(express.json(), provider.express());
    const base = await serve(app);
    const res = await post(`${base}/`, body, { [CERTIFICATE_HEADER]: await certificateFor(platform, body) });
    expect(res.status).toBe(500);
    expect(res.json?.error).toMatch(/raw request body is needed/);
    expect((await post(`${base}/`, body)).status).toBe(402);
  });

  it('uses req.ip for the quote rate limit', async () => {
    const provider = createProvider(baseOptions(platform, { rateLimitPerMinute: 1 })).serve(() => null);
    const app = express();
    app.set('trust proxy', true);
    app.use(provider.express());
    const base = await serve(app);
    expect((await post(`${base}/`, body, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(402);
    expect((await post(`${base}/`, body, { 'x-forwarded-for': '203.0.113.1' })).status).toBe(429);
    expect((await post(`${base}/`, body, { 'x-forwarded-for': '203.0.113.2' })).status).toBe(402);
  });
});
