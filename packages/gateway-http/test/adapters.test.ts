// One handler, three carriers: the same request gets the same answer in
// process (fetchAdapter), on node:http (toNodeListener) and mounted in an
// express app (nodeMiddleware), and what no route takes is the host's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeMiddleware, toNodeListener } from '../src/index.js';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

let s: HttpStack;
let alice: HttpAccount;
const servers: Server[] = [];

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  s = await startHttpStack();
  alice = await s.account();
  await s.publish('adapter-echo', '0.001');
});
afterAll(async () => {
  for (const server of servers) await new Promise((r) => server.close(r));
  await s?.close();
});

/** What a client sees of an answer: status, the headers that carry meaning, the body. */
async function seen(res: Response) {
  const h = res.headers;
  return {
    status: res.status,
    type: h.get('content-type'),
    nosniff: h.get('x-content-type-options'),
    referrer: h.get('referrer-policy'),
    auth: h.get('www-authenticate'),
    requestId: h.get('x-request-id'),
    body: await res.text(),
  };
}

describe('the handler, carried three ways', () => {
  it('answers the same requests the same way in process, on node:http and inside express', async () => {
    const nodeUrl = await listen(createServer(toNodeListener(s.handler)));
    const app = express();
    app.use(nodeMiddleware(s.handler));
    app.use((_req, res) => void res.status(404).json({ error: 'not found', code: 'NOT_FOUND' }));
    const expressUrl = await listen(createServer(app));
    const host = new URL(s.origin).host;
    const requests: Array<[string, RequestInit]> = [
      ['/v1/agents/no-such-service/manifest', { headers: { authorization: `Bearer ${alice.key}`, 'x-request-id': 'r1' } }],
      ['/v1/balance', { headers: { 'x-request-id': 'r2' } }],
      ['/v1/balance', { headers: { authorization: 'Bearer nope', 'x-request-id': 'r3' } }],
      ['/v1/call', { method: 'POST', headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'text/plain', 'x-request-id': 'r4' }, body: 'hi' }],
      ['/v1/no-such-path', { headers: { authorization: `Bearer ${alice.key}`, 'x-request-id': 'r5' } }],
      ['/health', { headers: { 'x-request-id': 'r6' } }],
    ];
    for (const [path, init] of requests) {
      const inProcess = await seen(await s.fetch(path, init));
      // The same Host as in process: the handler answers for its public host name only where a page or a cookie is involved.
      const withHost = { ...init, headers: { ...(init.headers as Record<string, string>), host } };
      expect(await seen(await fetch(`${nodeUrl}${path}`, withHost)), path).toEqual(inProcess);
      expect(await seen(await fetch(`${expressUrl}${path}`, withHost)), path).toEqual(inProcess);
    }
    // What they said: an unknown service, no credential, a bad one, a body of another type, no such path, alive.
    const statuses = await Promise.all(requests.map(async ([path, init]) => (await s.fetch(path, init)).status));
    expect(statuses).toEqual([404, 401, 401, 415, 404, 200]);
  });

  it('pays a call through each carrier: one charge per call, the answer the service gave', async () => {
    const nodeUrl = await listen(createServer(toNodeListener(s.handler)));
    const before = BigInt((await alice.api('/v1/balance')).body.balance_base_units);
    const call = (base: string | undefined) =>
      (base ? fetch(`${base}/v1/call`, init) : s.fetch('/v1/call', init)).then(async (r) => ({ status: r.status, body: await r.json() }));
    const init = {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      body: '{"service":"adapter-echo","payload":{"n":1}}',
    };
    for (const base of [undefined, nodeUrl]) {
      const r = await call(base);
      expect(r.status).toBe(200);
      expect(r.body.result).toEqual({ echo: { n: 1 } });
    }
    const after = BigInt((await alice.api('/v1/balance')).body.balance_base_units);
    // 0.001 USDC a call, twice: 20,000 base units of seven decimals.
    expect(before - after).toBe(20_000n);
  });

  it('leaves what no route takes to the host, and logs it once the host has answered', async () => {
    const lines: string[] = [];
    const logged = await startHttpStack({
      gateway: { logger: (await import('@farebox/gateway-core')).createLogger({ level: 'info', destination: { write: (l: string) => void lines.push(l) } }) },
    });
    try {
      let served = 0;
      const url = await listen(
        createServer(
          toNodeListener(logged.handler, {
            fallback: (_req, res) => {
              served++;
              res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>dashboard</title>');
            },
          }),
        ),
      );
      const page = await fetch(`${url}/billing`, { headers: { 'x-request-id': 'page-1' } });
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('dashboard');
      // The handler's own headers come with the host's answer.
      expect(page.headers.get('x-request-id')).toBe('page-1');
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(served).toBe(1);
      // Without a host's fallback: a JSON 404.
      const none = await logged.fetch('/billing');
      expect(none.status).toBe(404);
      expect(await none.json()).toEqual({ error: 'not found', code: 'NOT_FOUND' });
      const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.event === 'request' && l.route === 'unmatched');
      expect(requests.map((l) => [l.reqId === 'page-1', l.status])).toEqual([
        [true, 200],
        [false, 404],
      ]);
    } finally {
      await logged.close();
    }
  });

  it('answers HEAD like GET without a body, and OPTIONS on a path with the methods it takes', async () => {
    const url = await listen(createServer(toNodeListener(s.handler)));
    const head = await fetch(`${url}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await head.text()).toBe('');
    const options = await s.fetch('/health', { method: 'OPTIONS' });
    expect(options.status).toBe(200);
    expect(options.headers.get('allow')).toBe('GET, HEAD');
  });
});
