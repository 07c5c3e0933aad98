// POST /v1/call over HTTP: an ordinary route of @farebox/gateway-http's
// handler (src/routes/call.ts), behind the /v1 chain like every account
// route. The first test calls the gateway's handler in process with every
// kind of call request; the rest go through the running gateway (node:http)
// for what only HTTP can show: credentials and browser checks, the body rules
// of the gateway's one JSON reader (body.ts), headers, draining, the access
// log, the rate limits.
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpRequest } from '@farebox/gateway-http';
import { createHost } from '../src/index.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
let h: Harness;

interface Sent {
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body in two chunks without a Content-Length. */
  chunked?: boolean;
  agent?: Agent;
}
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: any;
  reusedSocket: boolean;
}

function send(base: string, s: Sent): Promise<Answer> {
  const url = new URL(s.path ?? '/v1/call', base);
  return new Promise((resolve, reject) => {
    const body = s.body === undefined ? undefined : Buffer.isBuffer(s.body) ? s.body : Buffer.from(s.body);
    const req = httpRequest(
      url,
      {
        method: s.method ?? 'POST',
        headers: { ...(body && !s.chunked ? { 'content-length': String(body.length) } : {}), ...s.headers },
        ...(s.agent ? { agent: s.agent } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode!, headers: res.headers, text, json, reusedSocket: req.reusedSocket });
        });
      },
    );
    req.on('error', reject);
    if (body && s.chunked) {
      const half = Math.floor(body.length / 2);
      req.write(body.subarray(0, half));
      req.end(body.subarray(half));
    } else req.end(body);
  });
}

const bearer = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra });
const PRICE = 10_000n;
const START = 5n * 10_000_000n;
const ok = JSON.stringify({ service: 'route-echo', payload: { text: 'héllo', n: 1 } });
const big = JSON.stringify({ service: 'route-echo', payload: { pad: 'x'.repeat(1024 * 1024) } });
const balanceOf = async (u: TestUser) => BigInt((await u.api('/v1/balance')).body.balance_base_units as string | number);

beforeAll(async () => {
  h = await startHarness('pglite', { rateLimits: { authPerMinute: 1000, accountPerMinute: 60 } });
  await h.publish('route-echo', { price: '0.001', handler: async (input) => ({ echoed: input }) });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

/** The code an error answer carries with its status (docs/api.md, "Errors"): a 403 is a CSRF or another refusal. */
const codeOf = (status: number): unknown =>
  ({ 400: 'BAD_REQUEST', 401: 'UNAUTHENTICATED', 404: 'NOT_FOUND', 413: 'PAYLOAD_TOO_LARGE', 415: 'UNSUPPORTED_MEDIA_TYPE' })[status] ??
  (status === 403 ? expect.stringMatching(/^(CSRF|FORBIDDEN)$/) : expect.any(String));

/** A request as the handler takes it, from this machine: a body goes whole, with its Content-Length. */
function record(s: Sent): HttpRequest {
  const body = s.body === undefined ? undefined : Buffer.isBuffer(s.body) ? s.body : Buffer.from(s.body);
  return {
    method: s.method ?? 'POST',
    url: s.path ?? '/v1/call',
    headers: { ...(body ? { 'content-length': String(body.length) } : {}), ...s.headers },
    body,
    remoteAddress: '127.0.0.1',
    encrypted: false,
  };
}

describe('POST /v1/call: a route of the handler', () => {
  it('answers every POST /v1/call itself (any path case, trailing slash, credential, body); other methods and paths answer as other /v1 paths do', async () => {
    const u = await h.user();
    const { handler } = createHost(h.gw.core, { dashboard: false });
    const answer = async (s: Sent) => {
      const a = await handler(record(s));
      expect(a, JSON.stringify(s)).not.toHaveProperty('unmatched');
      expect(a.headers['x-request-id'], JSON.stringify(s)).toMatch(/^[0-9a-f-]{36}$/);
      expect(a.headers['content-type'], JSON.stringify(s)).toBe('application/json; charset=utf-8');
      return { status: a.status, json: JSON.parse(String(a.body)) as Record<string, unknown> };
    };
    const echoed = { echoed: { text: 'héllo', n: 1 } };
    const needsJson = 'POST /v1/call takes a JSON body (Content-Type: application/json)';
    const cases: Array<[string, Sent, number, Record<string, unknown>]> = [
      ['a call', { headers: bearer(u.key), body: ok }, 200, { result: echoed }],
      ['a trailing slash', { path: '/v1/call/', headers: bearer(u.key), body: ok }, 200, { result: echoed }],
      ['another case, a query', { path: '/V1/CALL?debug=1', headers: bearer(u.key), body: ok }, 200, { result: echoed }],
      [
        'a session cookie with its CSRF token',
        // The session's Host check wants the gateway's public name.
        { headers: { cookie: u.cookie, 'x-csrf-token': u.csrf, 'content-type': 'application/json', host: new URL(h.url).host }, body: ok },
        200,
        { result: echoed },
      ],
      ['a form', { headers: bearer(u.key, { 'content-type': 'application/x-www-form-urlencoded' }), body: 'service=route-echo' }, 415, { error: needsJson }],
      [
        'a UTF-16 charset',
        { headers: bearer(u.key, { 'content-type': 'application/json; charset=utf-16' }), body: ok },
        415,
        { error: 'JSON bodies must be UTF-8' },
      ],
      ['a gzip body', { headers: bearer(u.key, { 'content-encoding': 'gzip' }), body: gzipSync(ok) }, 200, { result: echoed }],
      ['no body', { headers: { authorization: `Bearer ${u.key}` } }, 400, { error: 'body must be a JSON object' }],
      ['an empty body', { headers: { authorization: `Bearer ${u.key}`, 'content-length': '0' } }, 400, { error: 'body must be a JSON object' }],
      ['an empty JSON body', { headers: bearer(u.key), body: '' }, 400, { error: 'service required' }],
      ['no credential', { headers: { 'content-type': 'application/json' }, body: ok }, 401, { error: 'authentication required' }],
    ];
    for (const [name, s, status, json] of cases) {
      const a = await answer(s);
      expect([a.status, a.json], name).toEqual([status, status === 200 ? expect.objectContaining(json) : { ...json, code: codeOf(status) }]);
    }
    // Another method on the path, a path that only starts alike: what any /v1 path that names no operation gets.
    const notFound = { error: 'not found', code: 'NOT_FOUND' };
    expect(await answer({ method: 'GET', path: '/v1/no-such-path', headers: bearer(u.key) })).toEqual({ status: 404, json: notFound });
    for (const s of [{ method: 'GET' }, { method: 'PUT', body: ok }, { path: '/v1/callx', body: ok }, { path: '/v1/call//', body: ok }]) {
      expect(await answer({ ...s, headers: bearer(u.key) }), JSON.stringify(s)).toEqual({ status: 404, json: notFound });
      expect(await answer({ ...s, headers: { 'content-type': 'application/json' } }), JSON.stringify(s)).toEqual({
        status: 401,
        json: { error: 'authentication required', code: 'UNAUTHENTICATED' },
      });
    }
    // The charged ones: bearer (three paths), the cookie session, the gzip body.
    expect(await balanceOf(u)).toBe(START - 5n * PRICE);
  });

  it('serves a call with a bearer key or a session cookie, in any JSON framing, and echoes the request id', async () => {
    const u = await h.user();
    const charged: Array<[string, Sent]> = [
      ['a call', { headers: bearer(u.key), body: ok }],
      ['a chunked body', { headers: bearer(u.key), body: ok, chunked: true }],
      ['a UTF-8 byte order mark', { headers: bearer(u.key), body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(ok)]) }],
      ['charset=UTF-8', { headers: bearer(u.key, { 'content-type': 'Application/JSON; charset=UTF-8' }), body: ok }],
      ['charset="utf-8"', { headers: bearer(u.key, { 'content-type': 'application/json;charset="utf-8"' }), body: ok }],
      ['a gzip body', { headers: bearer(u.key, { 'content-encoding': 'gzip' }), body: gzipSync(ok) }],
      ['a deflate body', { headers: bearer(u.key, { 'content-encoding': 'deflate' }), body: deflateSync(ok) }],
      ['a br body', { headers: bearer(u.key, { 'content-encoding': 'br' }), body: brotliCompressSync(ok) }],
      ['Content-Encoding: identity', { headers: bearer(u.key, { 'content-encoding': 'identity' }), body: ok }],
      [
        'a session cookie with its CSRF token',
        { headers: { cookie: u.cookie, 'x-csrf-token': u.csrf, origin: h.url, 'content-type': 'application/json' }, body: ok },
      ],
      ['a request id', { headers: bearer(u.key, { 'x-request-id': 'trace-42' }), body: ok }],
    ];
    for (const [name, s] of charged) {
      const a = await send(h.url, s);
      expect(a.status, `${name}: ${a.text}`).toBe(200);
      expect(a.json.result, name).toEqual({ echoed: { text: 'héllo', n: 1 } });
      expect(a.headers, name).toMatchObject({
        'content-type': 'application/json; charset=utf-8',
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      });
      expect(a.headers['x-request-id'], name).toMatch(s.headers?.['x-request-id'] ?? /^[0-9a-f-]{36}$/);
    }
    expect(await balanceOf(u)).toBe(START - BigInt(charged.length) * PRICE);
  });

  it('refuses bodies by the rules of the JSON reader, before anything is held', async () => {
    const u = await h.user();
    const notUtf8 = Buffer.concat([Buffer.from('{"service":"route-echo","payload":{"t":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]);
    const cases: Array<[string, Sent, number, string]> = [
      ['malformed JSON', { headers: bearer(u.key), body: '{"service":' }, 400, 'invalid JSON body'],
      [
        'nested too deeply',
        { headers: bearer(u.key), body: `{"service":"route-echo","payload":{"a":${'['.repeat(70)}${']'.repeat(70)}}}` },
        400,
        'JSON nested too deeply (max depth 64)',
      ],
      ['bytes that are no UTF-8', { headers: bearer(u.key), body: notUtf8 }, 400, 'invalid UTF-8 in the JSON body'],
      [
        'a control character',
        { headers: bearer(u.key), body: '{"service":"route-echo","payload":{"nul":"\\u0000"}}' },
        400,
        'invalid payload.nul: control character U+0000 not allowed',
      ],
      [
        'an unpaired surrogate in a field name',
        { headers: bearer(u.key), body: '{"service":"route-echo","payload":{"k\\ud800":1}}' },
        400,
        'invalid field name in payload: unpaired surrogate U+D800 not allowed',
      ],
      [
        'a UTF-16 charset',
        { headers: bearer(u.key, { 'content-type': 'application/json; charset=utf-16' }), body: Buffer.from(ok, 'utf16le') },
        415,
        'JSON bodies must be UTF-8',
      ],
      [
        'a latin1 charset',
        { headers: bearer(u.key, { 'content-type': 'application/json; charset=latin1' }), body: Buffer.from(ok, 'latin1') },
        415,
        'JSON bodies must be UTF-8',
      ],
      ['an unknown content encoding', { headers: bearer(u.key, { 'content-encoding': 'x-unknown' }), body: ok }, 415, 'unsupported body encoding'],
      ['a gzip body that is not gzip', { headers: bearer(u.key, { 'content-encoding': 'gzip' }), body: ok }, 400, 'invalid gzip body'],
      [
        'a form',
        { headers: bearer(u.key, { 'content-type': 'application/x-www-form-urlencoded' }), body: 'service=route-echo&payload=x' },
        415,
        'POST /v1/call takes a JSON body (Content-Type: application/json)',
      ],
      ['text', { headers: bearer(u.key, { 'content-type': 'text/plain' }), body: ok }, 415, 'POST /v1/call takes a JSON body (Content-Type: application/json)'],
      ['a body over 1 MiB', { headers: bearer(u.key), body: big }, 413, 'request body too large'],
      ['a chunked body over 1 MiB', { headers: bearer(u.key), body: big, chunked: true }, 413, 'request body too large'],
      ['a gzip body over 1 MiB once inflated', { headers: bearer(u.key, { 'content-encoding': 'gzip' }), body: gzipSync(big) }, 413, 'request body too large'],
      // What the call's schema says of what was read.
      ['no body', { headers: { authorization: `Bearer ${u.key}` } }, 400, 'body must be a JSON object'],
      ['an empty JSON body', { headers: bearer(u.key), body: '' }, 400, 'service required'],
      ['an array', { headers: bearer(u.key), body: '[]' }, 400, 'body must be a JSON object'],
      ['a string', { headers: bearer(u.key), body: '"route-echo"' }, 400, 'body must be a JSON object'],
      [
        'an unknown field',
        { headers: bearer(u.key), body: JSON.stringify({ service: 'route-echo', payload: {}, price: 0 }) },
        400,
        "unknown field: price (only service and payload are accepted; put the service's input inside payload)",
      ],
      [
        'a payload that is not an object',
        { headers: bearer(u.key), body: JSON.stringify({ service: 'route-echo', payload: [1] }) },
        400,
        'payload must be an object',
      ],
      [
        'an Idempotency-Key over 255 characters',
        { headers: bearer(u.key, { 'idempotency-key': 'k'.repeat(256) }), body: ok },
        400,
        'invalid Idempotency-Key (1 to 255 characters)',
      ],
    ];
    for (const [name, s, status, error] of cases) {
      const a = await send(h.url, s);
      expect([a.status, a.json], name).toEqual([status, { error, code: codeOf(status) }]);
      expect(a.headers, name).toMatchObject({ 'content-type': 'application/json; charset=utf-8', 'x-content-type-options': 'nosniff' });
    }
    // An unknown service: the call had begun, so its answer names it (callId).
    const unknown = await send(h.url, { headers: bearer(u.key), body: JSON.stringify({ service: 'no-such-service', payload: {} }) });
    expect([unknown.status, unknown.json]).toEqual([404, { error: 'service not found', code: 'NOT_FOUND', callId: expect.stringMatching(/^call_/) }]);
    expect(await balanceOf(u)).toBe(START);
  });

  it('reads a refused body off before answering, so the connection carries the next call', async () => {
    const u = await h.user();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await send(h.url, { headers: bearer(u.key), body: ok, agent })).status).toBe(200);
      for (const s of [
        { body: big },
        { body: big, chunked: true },
        { body: ok, headers: bearer(u.key, { 'content-type': 'text/plain' }) },
        { body: ok, headers: bearer(u.key, { 'content-type': 'application/json; charset=latin1' }) },
      ]) {
        const refused = await send(h.url, { headers: bearer(u.key), ...s, agent });
        expect(refused.status).toBeGreaterThanOrEqual(413);
        expect(refused.reusedSocket).toBe(true);
        const next = await send(h.url, { headers: bearer(u.key), body: ok, agent });
        expect([next.status, next.reusedSocket]).toEqual([200, true]);
      }
    } finally {
      agent.destroy();
    }
    expect(await balanceOf(u)).toBe(START - 5n * PRICE);
  });

  it('checks credentials and the browser rules of a session cookie', async () => {
    const u = await h.user();
    const session = { cookie: u.cookie, 'content-type': 'application/json' };
    const cases: Array<[string, Sent, number, string, Record<string, string>?]> = [
      ['no credential', { headers: { 'content-type': 'application/json' }, body: ok }, 401, 'authentication required', { 'www-authenticate': 'Bearer' }],
      ['an unknown API key', { headers: bearer('fbx_not_a_key'), body: ok }, 401, 'invalid credential', { 'www-authenticate': 'Bearer error="invalid_token"' }],
      ['a Basic credential', { headers: bearer('x', { authorization: 'Basic YTpi' }), body: ok }, 401, 'invalid credential'],
      ['an empty Bearer', { headers: bearer('x', { authorization: 'Bearer ' }), body: ok }, 401, 'invalid credential'],
      ['an unknown session', { headers: { ...session, cookie: 'farebox_session=nope' }, body: ok }, 401, 'session expired'],
      ['a session without its CSRF token', { headers: session, body: ok }, 403, 'missing or invalid CSRF token'],
      ['a session with a wrong CSRF token', { headers: { ...session, 'x-csrf-token': 'wrong' }, body: ok }, 403, 'missing or invalid CSRF token'],
      [
        'a session from another origin',
        { headers: { ...session, 'x-csrf-token': u.csrf, origin: 'https://evil.example' }, body: ok },
        403,
        'cross-origin request refused',
      ],
      ['a session from an opaque origin', { headers: { ...session, 'x-csrf-token': u.csrf, origin: 'null' }, body: ok }, 403, 'cross-origin request refused'],
    ];
    for (const [name, s, status, error, headers] of cases) {
      const a = await send(h.url, s);
      expect([a.status, a.json], name).toEqual([status, { error, code: codeOf(status) }]);
      if (headers) expect(a.headers, name).toMatchObject(headers);
    }
    // A session cookie sent to another Host name (DNS rebinding) is refused before the session is read.
    const rebound = await send(h.url, { headers: { ...session, 'x-csrf-token': u.csrf, host: 'rebound.example' }, body: ok });
    expect(rebound.status).toBe(403);
    expect(rebound.json.error).toMatch(/^unknown host "rebound.example"/);
    expect(await balanceOf(u)).toBe(START);
  });

  it('applies Farebox-Max-Cost and the Idempotency-Key: a retry gets the first answer back, charged once', async () => {
    const u = await h.user();
    expect((await send(h.url, { headers: bearer(u.key, { 'farebox-max-cost': 'cheap' }), body: ok })).status).toBe(400);
    const capped = await send(h.url, { headers: bearer(u.key, { 'farebox-max-cost': '0.0001' }), body: ok });
    expect(capped.status).toBeGreaterThanOrEqual(400);
    expect(capped.status).toBeLessThan(500);
    const s: Sent = { headers: bearer(u.key, { 'idempotency-key': 'same-call' }), body: JSON.stringify({ service: 'route-echo', payload: { q: 1 } }) };
    const first = await send(h.url, s);
    expect(first.status).toBe(200);
    // The same call again, in another framing and through the other credential: the first answer.
    expect((await send(h.url, { ...s, chunked: true })).text).toBe(first.text);
    expect(
      (await send(h.url, { ...s, headers: { cookie: u.cookie, 'x-csrf-token': u.csrf, 'content-type': 'application/json', 'idempotency-key': 'same-call' } }))
        .text,
    ).toBe(first.text);
    expect(await balanceOf(u)).toBe(START - PRICE);
  });

  it('refuses past the account limit with 429 and Retry-After, and logs each request with its route and account', async () => {
    const carol = await h.user();
    const s: Sent = { headers: bearer(carol.key, { 'x-request-id': 'carol-call' }), body: JSON.stringify({ service: 'no-such-service', payload: {} }) };
    const answers: Answer[] = [];
    for (let i = 0; i < 65 && !answers.some((a) => a.status === 429); i++) answers.push(await send(h.url, s));
    const limited = answers.at(-1)!;
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.json.error).toMatch(/rate limit/i);
    // A session cookie of the same account counts against the same limit.
    expect((await send(h.url, { headers: { cookie: carol.cookie, 'x-csrf-token': carol.csrf, 'content-type': 'application/json' }, body: ok })).status).toBe(
      429,
    );
    const lines = h
      .logs()
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.event === 'request' && l.reqId === 'carol-call');
    const statuses = lines.map((l) => l.status);
    expect(statuses).toContain(404);
    expect(statuses.filter((x) => x === 429)).toHaveLength(1);
    for (const l of lines) {
      expect(l).toMatchObject({ method: 'POST', route: '/v1/call', principal: 'api_key', accountId: carol.id, ip: '127.0.0.1' });
      if (l.status === 429) expect(l.rateLimit).toBe('account');
    }
  });
});
