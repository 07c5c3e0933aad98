import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

// Strings no request may carry (NUL, other C0 and C1 controls, unpaired
// surrogates) and names that deceive (look-alikes, invisible characters, case).
const BAD_TEXT = [
  'a\u0000b',
  '\u0000',
  '\ud800x',
  'x\udc00',
  '\udc00\ud800',
  'c1\u0085',
  'esc\u001b[31m',
  'del\u007f',
  '\u0435cho',
  'echo\u200b',
  'ECHO',
  'echo ',
  '\u202eohce',
  'Qa Y!',
];
const badText = fc.oneof(
  fc.constantFrom(...BAD_TEXT),
  fc
    .tuple(
      fc.string({ maxLength: 8 }),
      fc.constantFrom('\u0000', '\u0001', '\u001f', '\u007f', '\u0080', '\u009f', '\ud800', '\udfff'),
      fc.string({ maxLength: 8 }),
    )
    .map(([a, c, b]) => a + c + b),
);

// Bodies that look like the real ones with wrong types, extra keys, huge or
// odd values, plus arbitrary JSON.
const oddValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(-1, 0, 1e308, -0, 0.1 + 0.2, 1000.0000001, Number.MAX_SAFE_INTEGER, '', ' ', '0x10', '1e3', 'NaN', null, [], {}, 'x'.repeat(600)),
  fc.string({ maxLength: 80 }),
  badText,
  fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), badText), fc.oneof(badText, fc.string({ maxLength: 6 })), { maxKeys: 3 }),
);
const bodyFor = (keys: string[]) =>
  fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record(Object.fromEntries(keys.map((k) => [k, oddValue])), { requiredKeys: [] }),
    fc.dictionary(fc.oneof(fc.constantFrom(...keys), fc.string({ maxLength: 12 }), badText), oddValue, { maxKeys: 5 }),
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
    return JSON.stringify([
      balance.body.balance_base_units,
      keys.body.length,
      mine.body,
      tx.body.length,
      stats.body.accounts,
      (await u.api('/v1/me')).body.is_publisher,
    ]);
  }

  it.each(endpoints)(
    '$method $path never answers 500, and a refused body changes nothing',
    async ({ method, path, keys }) => {
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
    },
    120_000,
  );

  it('refuses NUL, controls and unpaired surrogates in every field of every JSON route with 400 naming the field, and changes nothing', async () => {
    const valid: Record<string, unknown> = {
      amount: 1,
      service: 'echo',
      payload: {},
      name: 'k',
      pricePerCallLamports: 1000,
      endpoint: 'https://example.com/x',
      description: 'd',
      email: 'x@example.com',
      password: 'correct horse battery',
    };
    const bad: Array<[string, string]> = [
      ['a\u0000b', 'control character U+0000 not allowed'],
      ['\ud800x', 'unpaired surrogate U+D800 not allowed'],
      ['c1\u0085', 'control character U+0085 not allowed'],
      ['x\u001b', 'control character U+001B not allowed'],
    ];
    const mcp = await mcpHeaders();
    const routes: Array<{
      method: string;
      path: string;
      keys: string[];
      wrap?: (body: Record<string, unknown>) => unknown;
      field?: (key: string) => string;
      headers?: Record<string, string>;
      error?: (r: { body: any }) => string;
    }> = [
      ...endpoints,
      { method: 'POST', path: '/v1/call', keys: ['text'], wrap: (b) => ({ service: 'echo', payload: b }), field: (k) => `payload.${k}` },
      {
        method: 'POST',
        path: '/register',
        keys: ['client_name'],
        wrap: (b) => ({ redirect_uris: ['http://127.0.0.1:9/cb'], ...b }),
        error: (r) => r.body.error_description,
      },
      { method: 'POST', path: '/v1/disputes', keys: ['escrowId', 'proof', 'reason'] },
      {
        method: 'POST',
        path: '/mcp',
        keys: ['service'],
        headers: mcp,
        wrap: (b) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'call_agent', arguments: { service: 'echo', payload: {}, ...b } } }),
        field: (k) => `params.arguments.${k}`,
        error: (r) => r.body.error.message,
      },
    ];
    for (const r of routes) {
      for (const key of r.keys) {
        for (const [text, problem] of bad) {
          const fields = { ...Object.fromEntries(r.keys.map((k) => [k, valid[k] ?? 'x'])), [key]: text };
          const before = await snapshot();
          // JSON.stringify writes an unpaired surrogate as its escape (\ud800), as a client does.
          const res = await u.api(r.path, {
            method: r.method,
            body: JSON.stringify(r.wrap ? r.wrap(fields) : fields),
            ...(r.headers ? { headers: r.headers } : {}),
          });
          const label = `${r.method} ${r.path} ${key} ${JSON.stringify(text)}`;
          expect(res.status, label).toBe(400);
          expect(r.error ? r.error(res) : res.body.error, label).toBe(`invalid ${r.field ? r.field(key) : key}: ${problem}`);
          expect(await snapshot(), label).toBe(before);
        }
      }
      // In a field name too.
      const res = await u.api(r.path, {
        method: r.method,
        body: JSON.stringify(r.wrap ? r.wrap({ 'k\u0000': 1 }) : { 'k\u0000': 1 }),
        ...(r.headers ? { headers: r.headers } : {}),
      });
      expect(res.status, `${r.path} field name`).toBe(400);
      expect(r.error ? r.error(res) : res.body.error, `${r.path} field name`).toMatch(
        /^invalid field name( in [\w.]+)?: control character U\+0000 not allowed$/,
      );
    }
    // Forms (sign-in) take the same rule.
    const form = await fetch(`${h.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=x%40example.com&password=a%00b',
      redirect: 'manual',
    });
    expect([form.status, await form.json()]).toEqual([400, { error: 'invalid password: control character U+0000 not allowed', code: 'BAD_REQUEST' }]);
    // The OAuth forms and /authorize's query too.
    for (const path of ['/token', '/revoke']) {
      const res = await fetch(`${h.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=authorization_code&code=a%00b&client_id=c',
      });
      expect(res.status, path).toBe(400);
      expect(JSON.stringify(await res.json()), path).toContain('invalid code: control character U+0000 not allowed');
    }
    const page = await fetch(`${h.url}/authorize?response_type=code&client_id=c&state=%E2%80%AEx%1B`, { redirect: 'manual' });
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('invalid state: control character U+001B not allowed');
    // And every path parameter and query string.
    for (const [method, path, field] of [
      ['GET', '/v1/agents/a%00b/manifest', 'service'],
      ['PUT', '/v1/agents/a%00b', 'service'],
      ['DELETE', '/v1/agents/a%00b', 'service'],
      ['DELETE', '/v1/api-keys/a%C2%85', 'id'],
      ['DELETE', '/v1/oauth/connections/%00', 'id'],
      ['GET', '/v1/disputes/%00', 'escrowId'],
      ['GET', '/v1/agents?q=%00', 'q'],
      ['GET', '/v1/transactions?limit=%00', 'limit'],
    ] as const) {
      const before = await snapshot();
      const res = await u.api(path, { method, ...(method === 'PUT' ? { body: { description: 'x' } } : {}) });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(res.body.error, `${method} ${path}`).toMatch(new RegExp(`^invalid ${field}: control character U\\+00(00|85) not allowed$`));
      expect(await snapshot()).toBe(before);
    }
    for (const path of ['/v1/operator/disputes/%00/resolve', '/v1/operator/settlements/%00/retry'])
      expect((await u.api(path, { method: 'POST', body: '{}' })).status, path).toBeLessThan(500);
  }, 120_000);

  it('answers malformed JSON, a wrong content type and an oversize body without a 500', async () => {
    for (const path of ['/v1/topup', '/v1/call', '/v1/api-keys']) {
      expect((await u.api(path, { method: 'POST', body: '{"amount":' })).status).toBe(400);
      expect((await u.api(path, { method: 'POST', body: 'amount=1', headers: { 'content-type': 'text/plain' } })).status).toBeLessThan(500);
      expect((await u.api(path, { method: 'POST', body: JSON.stringify({ x: 'y'.repeat(1_100_000) }) })).status).toBe(413);
    }
  });

  const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);
  const deepObject = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

  /** An OAuth access token for `u` (/mcp parses its body once the token is accepted; an API key is refused before). */
  async function mcpHeaders() {
    const { tokens } = await (await rawClient(h.url)).authorize(u);
    return { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' };
  }
  const mcpCall = (payload: string) =>
    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_agent","arguments":{"service":"echo","payload":${payload}}}}`;

  it('refuses JSON nested deeper than 64 on every JSON route with 400 before anything is held, and takes 64', async () => {
    const mcp = await mcpHeaders();
    const routes: Array<{ method: string; path: string; headers?: Record<string, string>; wrap: (inner: string) => string; limitKb?: number }> = [
      ...endpoints.map((e) => ({ method: e.method, path: e.path, wrap: (inner: string) => `{"${e.keys[0]}":${inner}}` })),
      { method: 'POST', path: '/v1/call', wrap: (inner) => `{"service":"echo","payload":{"x":${inner}}}` },
      { method: 'POST', path: '/register', wrap: (inner) => `{"client_name":"x","redirect_uris":${inner}}`, limitKb: 64 },
      { method: 'POST', path: '/v1/disputes', wrap: (inner) => `{"escrowId":${inner}}`, limitKb: 16 },
      { method: 'POST', path: '/mcp', headers: mcp, wrap: mcpCall },
    ];
    for (const r of routes) {
      // Smaller body limits (registration 64 KiB, disputes 16 KiB) get depths that fit in them.
      const inners = [nested(5_000), r.limitKb === 16 ? deepObject(2_000) : deepObject(5_000), ...(r.limitKb ? [] : [nested(100_000)])];
      for (const inner of inners) {
        const before = await snapshot();
        const res = await u.api(r.path, { method: r.method, body: r.wrap(inner), ...(r.headers ? { headers: r.headers } : {}) });
        expect(res.status, `${r.method} ${r.path}`).toBe(400);
        expect(JSON.stringify(res.body), `${r.method} ${r.path}`).toContain('JSON nested too deeply (max depth 64)');
        expect(await snapshot()).toBe(before);
      }
    }
    // Strings that look like brackets do not count; 62 levels inside the payload (UTF-8, said or not) are served and charged as usual.
    const ok = await u.api('/v1/call', {
      body: `{"service":"echo","payload":{"s":"${'['.repeat(500)}","x":${nested(62)}}}`,
      headers: { 'content-type': 'application/json; charset=UTF-8' },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  }, 120_000);

  it('judges the nesting of a body in any charset (UTF-16 cannot hide it), and no charset or content encoding answers 500', async () => {
    const mcp = await mcpHeaders();
    // In UTF-16LE "\u2200" is the bytes 00 22: a byte scan that took them for a quote would skip the nesting after it.
    const hidden = (depth: number) => `{"s":"\u2200","x":${nested(depth)}}`;
    const routes: Array<{ path: string; headers: Record<string, string>; body: string }> = [
      { path: '/v1/call', headers: { authorization: `Bearer ${u.key}` }, body: `{"service":"echo","payload":${hidden(5_000)}}` },
      { path: '/v1/api-keys', headers: { authorization: `Bearer ${u.key}` }, body: `{"name":${hidden(5_000)}}` },
      { path: '/auth/login', headers: {}, body: `{"email":${hidden(5_000)},"password":"x"}` },
      { path: '/register', headers: {}, body: `{"client_name":"x","redirect_uris":${hidden(5_000)}}` },
      { path: '/v1/disputes', headers: {}, body: `{"escrowId":${hidden(3_000)}}` },
      { path: '/mcp', headers: mcp, body: mcpCall(hidden(5_000)) },
    ];
    const utf16be = (text: string) => Buffer.from(text, 'utf16le').swap16();
    for (const r of routes) {
      const bodies: Array<[string, Record<string, string>, Uint8Array]> = [
        ['utf-16le', { 'content-type': 'application/json; charset=utf-16le' }, Buffer.from(r.body, 'utf16le')],
        ['utf-16', { 'content-type': 'application/json; charset=utf-16' }, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(r.body, 'utf16le')])],
        ['utf-16be', { 'content-type': 'application/json; charset=utf-16be' }, utf16be(r.body)],
        ['latin1', { 'content-type': 'application/json; charset=latin1' }, Buffer.from(r.body, 'latin1')],
        ['an unknown content encoding', { 'content-type': 'application/json', 'content-encoding': 'x-unknown' }, Buffer.from(r.body)],
      ];
      for (const [label, headers, bytes] of bodies) {
        const before = await snapshot();
        const res = await fetch(`${h.url}${r.path}`, { method: 'POST', headers: { ...r.headers, ...headers }, body: new Uint8Array(bytes) });
        const text = await res.text();
        expect(res.status, `${r.path} ${label}: ${text}`).toBe(415);
        expect(text, `${r.path} ${label}`).toMatch(/UTF-8|unsupported/);
        expect(await snapshot(), `${r.path} ${label}`).toBe(before);
      }
    }
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
    // Every route with a path parameter: 400 with the reason.
    const withParams = [
      ['GET', '/v1/agents/{}/manifest'],
      ['PUT', '/v1/agents/{}'],
      ['DELETE', '/v1/agents/{}'],
      ['DELETE', '/v1/api-keys/{}'],
      ['DELETE', '/v1/oauth/connections/{}'],
      ['GET', '/v1/disputes/{}'],
      ['POST', '/v1/operator/disputes/{}/resolve'],
      ['POST', '/v1/operator/settlements/{}/retry'],
    ];
    // Everything else (no such route, the OAuth pages, the dashboard, the devnet, MCP): no 500.
    const others = [
      ['GET', '/v1/operator/disputes/{}'],
      ['GET', '/v1/{}'],
      ['POST', '/v1/{}'],
      ['GET', '/authorize/{}'],
      ['GET', '/authorize?client_id={}'],
      ['POST', '/token/{}'],
      ['POST', '/register/{}'],
      ['GET', '/.well-known/{}'],
      ['POST', '/mcp/{}'],
      ['GET', '/auth/{}'],
      ['POST', '/auth/login/{}'],
      ['GET', '/{}'],
      ['GET', '/{}/index.html'],
      ['GET', '/devnet/{}'],
      ['GET', '/metrics/{}'],
      ['GET', '/health/{}'],
    ];
    for (const [method, template] of [...withParams, ...others]) {
      for (const seg of bad) {
        const before = await snapshot();
        const res = await u.api(template!.replace('{}', seg), { method: method!, ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }) });
        expect(res.status, `${method} ${template} ${seg}`).toBeLessThan(500);
        if (withParams.some(([m, t]) => m === method && t === template)) {
          expect(res, `${method} ${template} ${seg}`).toMatchObject({ status: 400, body: { error: 'malformed percent-encoding in the URL' } });
        } else if (template!.startsWith('/v1/')) expect(res.status, `${method} ${template} ${seg}`).toBeGreaterThanOrEqual(400);
        expect(await snapshot()).toBe(before);
      }
    }
    expect(await u.api('/v1/agents/%E0%A4%A/manifest')).toMatchObject({ status: 400, body: { error: 'malformed percent-encoding in the URL' } });
  }, 120_000);
});
