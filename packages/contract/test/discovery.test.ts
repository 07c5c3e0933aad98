import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createDiscoveryClient, DiscoveryApiError } from '../src/index.js';

// The discovery backend's reader against a loopback backend; the real
// farebox-discovery is read in e2e/discovery.test.ts.
const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

const agent = {
  service: 'fx',
  pricePerCall: 0.25,
  pricePerCallBaseUnits: '2500000',
  description: 'rates',
  endpoint: 'http://127.0.0.1:9/',
  ownerWallet: 'GOWNER',
  acceptedToken: 'USDC',
  createdAt: 1,
};

async function backend(answer: (path: string) => { status: number; body: unknown }): Promise<string> {
  const server = createServer((req, res) => {
    const { status, body } = answer(req.url ?? '/');
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function failure(p: Promise<unknown>): Promise<DiscoveryApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DiscoveryApiError);
  return err as DiscoveryApiError;
}

describe('createDiscoveryClient', () => {
  it('reads search, pages and entries, base units as bigint; an unknown service is undefined', async () => {
    const url = await backend((path) => {
      if (path.startsWith('/search'))
        return { status: 200, body: { query: 'fx', mode: 'keyword-only', results: [{ service: 'fx', score: 1, bm25: 1, cosine: 0, agent }] } };
      if (path === '/agents?limit=1000') return { status: 200, body: { agents: [agent], total: 2, next: 'fx' } };
      if (path === '/agents?limit=1000&after=fx') return { status: 200, body: { agents: [{ ...agent, service: 'gx' }], total: 2, next: null } };
      if (path === '/agents/fx') return { status: 200, body: agent };
      return { status: 404, body: { error: 'service not found' } };
    });
    const discovery = createDiscoveryClient({ url: `${url}/` });
    expect(discovery.url).toBe(url);
    const found = await discovery.search('fx', { limit: 5 });
    expect(found).toMatchObject({ query: 'fx', mode: 'keyword-only', results: [{ service: 'fx', agent: { pricePerCallBaseUnits: 2_500_000n } }] });
    expect((await discovery.listAllServices()).map((s) => s.service)).toEqual(['fx', 'gx']);
    expect(await discovery.getService('fx')).toMatchObject({ service: 'fx', ownerWallet: 'GOWNER' });
    expect(await discovery.getService('nope')).toBeUndefined();
  });

  it('says what went wrong: bad options, the backend refusing, an answer that does not parse, nobody answering', async () => {
    expect(() => createDiscoveryClient({ url: 'ftp://x' })).toThrow(/url must be an http\(s\) URL/);
    const url = await backend((path) => {
      if (path.startsWith('/search?q=bad')) return { status: 400, body: { error: 'q required' } };
      if (path.startsWith('/search?q=text')) return { status: 200, body: 'not json' };
      return { status: 200, body: { query: 'x', mode: 'hybrid', results: [{ service: 'fx' }] } };
    });
    const discovery = createDiscoveryClient({ url });
    expect(await failure(discovery.search('bad'))).toMatchObject({
      code: 'HTTP',
      message: 'discovery backend: q required',
      data: { status: 400, serverMessage: 'q required' },
    });
    expect((await failure(discovery.search('text'))).code).toBe('BAD_RESPONSE');
    expect(await failure(discovery.search('shape'))).toMatchObject({
      code: 'BAD_RESPONSE',
      message: expect.stringContaining('/search with an unexpected body (results.0.score'),
    });
    const down = await failure(createDiscoveryClient({ url: 'http://127.0.0.1:9' }).health());
    expect(down.code).toBe('NETWORK');
    expect(down.message).toMatch(/^discovery backend http:\/\/127\.0\.0\.1:9 unreachable: /);
  });
});
