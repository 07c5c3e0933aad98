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
});
