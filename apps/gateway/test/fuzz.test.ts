import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestUser } from './harness.js';

// Bodies that look like the real ones with wrong types, extra keys, huge or
// odd values, plus arbitrary JSON.
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(-1, 0, 1e308, -0, 0.1 + 0.2, 1000.0000001, Number.MAX_SAFE_INTEGER, '', ' ', '0x10', '1e3', 'NaN', null, [], {}, 'x'.repeat(600)),
  fc.string({ maxLength: 80 }),
);
const bodyFor = (keys: string[]) =>
  fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record(Object.fromEntries(keys.map((k) => [k, oddValue])), { requiredKeys: [] }),
    fc.dictionary(fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 12 })), oddValue, { maxKeys: 5 }),
  );

const endpoints: Array<{ method: string; path: string; keys: string[] }> = [
  { method: 'POST', path: '/v1/topup', keys: ['amount'] },
  { method: 'POST', path: '/v1/call', keys: ['service', 'payload'] },
  { method: 'POST', path: '/v1/api-keys', keys: ['name'] },
  { method: 'POST', path: '/v1/publisher/activate', keys: ['name'] },
  { method: 'POST', path: '/v1/agents', keys: ['service', 'pricePerCallLamports', 'endpoint', 'description'] },
  { method: 'PUT', path: '/v1/agents/echo', keys: ['pricePerCallLamports', 'endpoint', 'description'] },
  { method: 'POST', path: '/auth/signup', keys: ['email', 'password'] },
  { method: 'POST', path: '/auth/login', keys: ['email', 'password'] },
];

describe('fuzzing every JSON endpoint', () => {
  let h: Harness;
  let u: TestUser;
  beforeAll(async () => {
    h = await startHarness('pglite');
    u = await h.user();
    await h.publish('echo', { price: '0.01' });
  }, 120_000);
  afterAll(() => h?.close());

  async function snapshot() {
    const [balance, keys, mine, tx, stats] = await Promise.all([
      u.api('/v1/balance'),
      u.api('/v1/api-keys'),
      u.api('/v1/agents/mine'),
      u.api('/v1/transactions?limit=500'),
      u.api('/v1/platform/stats'),
    ]);
    return JSON.stringify([balance.body.balance_base_units, keys.body.length, mine.body, tx.body.length, stats.body.accounts, (await u.api('/v1/me')).body.is_publisher]);
  }

  it.each(endpoints)('$method $path never answers 500, and a refused body changes nothing', async ({ method, path, keys }) => {
    await fc.assert(
      fc.asyncProperty(bodyFor(keys), async (body) => {
        const before = await snapshot();
        const r = await u.api(path, { method, body: JSON.stringify(body) });
        expect(r.status, JSON.stringify(body)).toBeLessThan(500);
        expect(typeof r.body?.error === 'string' || r.status < 300, JSON.stringify(r.body)).toBe(true);
        if (r.status >= 400) expect(await snapshot()).toBe(before);
      }),
      { numRuns: 18 },
    );
  }, 120_000);

  it('answers malformed JSON, a wrong content type and an oversize body without a 500', async () => {
    for (const path of ['/v1/topup', '/v1/call', '/v1/api-keys']) {
      expect((await u.api(path, { method: 'POST', body: '{"amount":' })).status).toBe(400);
      expect((await u.api(path, { method: 'POST', body: 'amount=1', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(500);
      expect((await u.api(path, { method: 'POST', body: JSON.stringify({ x: 'y'.repeat(1_100_000) }) })).status).toBe(413);
    }
  });

  const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);
  const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

  it('refuses JSON nested deeper than 64 on every JSON route with 400 before anything is held, and takes 64', async () => {
    // (/mcp parses bodies with the same parser once an OAuth token is accepted; an API key is refused before it.)
    const routes: Array<{ method: string; path: string; headers?: Record<string, string>; wrap: (inner: string) => string }> = [
      ...endpoints.map((e) => ({ method: e.method, path: e.path, wrap: (inner: string) => `{"${e.keys[0]}":${inner}}` })),
      { method: 'POST', path: '/v1/call', wrap: (inner) => `{"service":"echo","payload":{"x":${inner}}}` },
      { method: 'POST', path: '/register', wrap: (inner) => `{"client_name":"x","redirect_uris":${inner}}` },
    ];
    for (const r of routes) {
      // Registration bodies are limited to 64 KiB: 100,000 levels are refused as too large there.
      for (const inner of [nested(5_000), deepObject(5_000), ...(r.path === '/register' ? [] : [nested(100_000)])]) {
        const before = await snapshot();
        const res = await u.api(r.path, { method: r.method, body: r.wrap(inner), ...(r.headers ? { headers: r.headers } : {}) });
        expect(res.status, `${r.method} ${r.path}`).toBe(400);
        expect(JSON.stringify(res.body), `${r.method} ${r.path}`).toContain('JSON nested too deeply (max depth 64)');
        expect(await snapshot()).toBe(before);
      }
    }
    // Strings that look like brackets do not count; 62 levels inside the payload are served and charged as usual.
    const ok = await u.api('/v1/call', { body: `{"service":"echo","payload":{"s":"${'['.repeat(500)}","x":${nested(62)}}}` });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  }, 120_000);

  it('answers huge arrays and malformed percent-encoding in any path without a 500, and changes nothing', async () => {
    const huge = JSON.stringify(Array.from({ length: 150_000 }, (_, i) => i));
    for (const e of endpoints) {
      const before = await snapshot();
      const res = await u.api(e.path, { method: e.method, body: `{"${e.keys[0]}":${huge}}` });
      expect(res.status, e.path).toBeGreaterThanOrEqual(400);
      expect(res.status, e.path).toBeLessThan(500);
      expect(await snapshot()).toBe(before);
    }
    const bad = ['%E0%A4%A', '%', '%zz', '%C0%80x', '%ED%A0%80'];
    const paths = [
      ['GET', '/v1/agents/{}/manifest'],
      ['PUT', '/v1/agents/{}'],
      ['DELETE', '/v1/agents/{}'],
      ['DELETE', '/v1/api-keys/{}'],
      ['DELETE', '/v1/oauth/connections/{}'],
      ['GET', '/v1/operator/disputes/{}'],
      ['POST', '/v1/operator/disputes/{}/resolve'],
      ['GET', '/v1/{}'],
      ['GET', '/authorize/{}'],
      ['GET', '/{}'],
      ['GET', '/devnet/{}'],
    ];
    for (const [method, template] of paths) {
      for (const seg of bad) {
        const before = await snapshot();
        const res = await u.api(template!.replace('{}', seg), { method: method!, ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }) });
        expect(res.status, `${method} ${template} ${seg}`).toBeLessThan(500);
        if (template!.startsWith('/v1/')) expect(res.status, `${method} ${template} ${seg}`).toBeGreaterThanOrEqual(400);
        expect(await snapshot()).toBe(before);
      }
    }
    expect(await u.api('/v1/agents/%E0%A4%A/manifest')).toMatchObject({ status: 400, body: { error: 'malformed percent-encoding in the URL' } });
  }, 120_000);
});
