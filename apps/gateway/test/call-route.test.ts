// POST /v1/call without express (src/call-route.ts): it takes only the requests
// it can answer as the express route would, and answers them the same. Each
// request here goes to the gateway as started (the express-free route first)
// and to a second server over the same core whose calls go through express
// alone; status, body and headers must agree.
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/index.js';
import { callRoute } from '../src/call-route.js';
import { startHarness, type Harness, type TestUser } from './harness.js';

let h: Harness;
let alice: TestUser;
let expressOnly: Server;
let expressUrl: string;
let takenOnly: Server;
let takenUrl: string;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Sent {
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Send the body in chunks without a Content-Length. */
  chunked?: boolean;
}
interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

function send(base: string, s: Sent): Promise<Answer> {
  const url = new URL(s.path ?? '/v1/call', base);
  return new Promise((resolve, reject) => {
    const body = s.body === undefined ? undefined : Buffer.isBuffer(s.body) ? s.body : Buffer.from(s.body);
    const req = httpRequest(
      url,
      { method: s.method ?? 'POST', headers: { ...(body && !s.chunked ? { 'content-length': String(body.length) } : {}), ...s.headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
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

/** What a caller sees of an answer, without what differs from call to call (ids, balances, timings). */
function seen(a: Answer) {
  let body: unknown = a.text;
  try {
    const parsed = JSON.parse(a.text) as Record<string, unknown>;
    const { callId, trace, newBalance, ...rest } = parsed;
    body = { ...rest, ...(callId ? { callId: typeof callId } : {}), ...(trace ? { steps: (trace as { steps: Array<{ name: string; status: string }> }).steps.map((x) => `${x.name}:${x.status}`) } : {}), ...(newBalance ? { newBalance: typeof newBalance } : {}) };
  } catch {
    // not JSON: compared as text
  }
  const pick = ['content-type', 'x-content-type-options', 'referrer-policy', 'www-authenticate', 'retry-after'];
  return { status: a.status, body, headers: Object.fromEntries(pick.filter((k) => a.headers[k] !== undefined).map((k) => [k, a.headers[k]])), requestId: typeof a.headers['x-request-id'] };
}

const json = (key: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json', ...extra });

beforeAll(async () => {
  h = await startHarness('pglite', { rateLimits: { authPerMinute: 1000, accountPerMinute: 60 } });
  alice = await h.user();
  await h.publish('route-echo', { price: '0.001', handler: async (input) => ({ echoed: input }) });
  expressOnly = createServer(createApp(h.gw.core, { fastCallRoute: false }));
  expressUrl = await listen(expressOnly);
  // Only what the express-free route takes is answered; the rest gets 599.
  const fast = callRoute(h.gw.core, () => false, () => undefined);
  takenOnly = createServer((req, res) => {
    if (!fast(req, res)) res.writeHead(599).end();
  });
  takenUrl = await listen(takenOnly);
}, 120_000);

afterAll(async () => {
  await new Promise((r) => expressOnly?.close(r));
  await new Promise((r) => takenOnly?.close(r));
  await h?.close();
});

describe('POST /v1/call without express', () => {
  it('takes bearer calls with a UTF-8 JSON body and leaves every other request to express', async () => {
    const body = JSON.stringify({ service: 'route-echo', payload: { n: 1 } });
    const taken: Sent[] = [
      { headers: json(alice.key), body },
      { headers: json(alice.key, { 'content-type': 'application/json; charset=UTF-8' }), body },
      { headers: json(alice.key), body, chunked: true },
      { path: '/v1/call?debug=1', headers: json(alice.key), body },
      { headers: json('not-a-key'), body },
    ];
    const left: Sent[] = [
      { headers: { cookie: alice.cookie, 'x-csrf-token': alice.csrf, 'content-type': 'application/json' }, body },
      { headers: json(alice.key, { 'content-type': 'application/x-www-form-urlencoded' }), body: 'service=route-echo' },
      { headers: json(alice.key, { 'content-type': 'application/json; charset=utf-16' }), body },
      { headers: json(alice.key, { 'content-type': 'text/plain' }), body },
      { headers: json(alice.key, { 'content-encoding': 'gzip' }), body },
      { headers: { authorization: `Bearer ${alice.key}` } },
      { path: '/v1/call/', headers: json(alice.key), body },
      { path: '/V1/CALL', headers: json(alice.key), body },
      { method: 'PUT', headers: json(alice.key), body },
      { path: '/v1/callx', headers: json(alice.key), body },
    ];
    for (const s of taken) expect((await send(takenUrl, s)).status, JSON.stringify(s.headers)).not.toBe(599);
    for (const s of left) expect((await send(takenUrl, s)).status, `${s.method ?? 'POST'} ${s.path ?? ''} ${JSON.stringify(s.headers)}`).toBe(599);
  });

  it('answers what the express route answers, refusals and charged calls alike', async () => {
    const alice = await h.user();
    const ok = JSON.stringify({ service: 'route-echo', payload: { text: 'héllo', n: 12345678901234567890 } });
    const cases: Array<[string, Sent]> = [
      ['a charged call', { headers: json(alice.key), body: ok }],
      ['a charged call, chunked', { headers: json(alice.key), body: ok, chunked: true }],
      ['a UTF-8 byte order mark', { headers: json(alice.key), body: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(ok)]) }],
      ['a request id echoed', { headers: json(alice.key, { 'x-request-id': 'trace-42' }), body: ok }],
      ['malformed JSON', { headers: json(alice.key), body: '{"service":' }],
      ['JSON nested too deeply', { headers: json(alice.key), body: `{"service":"route-echo","payload":{"a":${'['.repeat(70)}${']'.repeat(70)}}}` }],
      ['a body over 1 MiB', { headers: json(alice.key), body: JSON.stringify({ service: 'route-echo', payload: { pad: 'x'.repeat(1024 * 1024) } }) }],
      ['a chunked body over 1 MiB', { headers: json(alice.key), body: JSON.stringify({ service: 'route-echo', payload: { pad: 'x'.repeat(1024 * 1024) } }), chunked: true }],
      ['an empty body', { headers: json(alice.key), body: '' }],
      ['an array', { headers: json(alice.key), body: '[]' }],
      ['a string', { headers: json(alice.key), body: '"route-echo"' }],
      ['an unknown field', { headers: json(alice.key), body: JSON.stringify({ service: 'route-echo', payload: {}, price: 0 }) }],
      ['a payload that is not an object', { headers: json(alice.key), body: JSON.stringify({ service: 'route-echo', payload: [1] }) }],
      ['an unknown service', { headers: json(alice.key), body: JSON.stringify({ service: 'no-such-service', payload: {} }) }],
      ['invalid UTF-8 in a string (refused)', { headers: json(alice.key), body: Buffer.concat([Buffer.from('{"service":"route-echo","payload":{"t":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}')]) }],
      ['an unknown API key', { headers: json('fbx_not_a_key'), body: ok }],
      ['a Basic credential', { headers: json('x', { authorization: 'Basic YTpi' }), body: ok }],
      ['an empty Bearer', { headers: json('x', { authorization: 'Bearer ' }), body: ok }],
      ['an Idempotency-Key over 255 characters', { headers: json(alice.key, { 'idempotency-key': 'k'.repeat(256) }), body: ok }],
      ['Farebox-Max-Cost not an amount', { headers: json(alice.key, { 'farebox-max-cost': 'cheap' }), body: ok }],
      ['Farebox-Max-Cost under the price', { headers: json(alice.key, { 'farebox-max-cost': '0.0001' }), body: ok }],
    ];
    for (const [name, s] of cases) {
      const viaExpress = await send(expressUrl, s);
      const fast = await send(h.url, s);
      expect(seen(fast), name).toEqual(seen(viaExpress));
      if (s.headers?.['x-request-id']) expect(fast.headers['x-request-id']).toBe('trace-42');
    }
    // Both charged the same calls: four charged cases, each sent twice (bytes that are no UTF-8 are refused, not read as U+FFFD).
    expect((await alice.api('/v1/balance')).body.balance_base_units).toBe(5 * 10_000_000 - 8 * 10_000);
  });

  it('an idempotent retry through either route gets the first answer back, charged once', async () => {
    const bob = await h.user();
    const s: Sent = { headers: json(bob.key, { 'idempotency-key': 'same-call' }), body: JSON.stringify({ service: 'route-echo', payload: { q: 1 } }) };
    const first = await send(h.url, s);
    const again = await send(expressUrl, s);
    const third = await send(h.url, s);
    expect(first.status).toBe(200);
    expect(again.text).toBe(first.text);
    expect(third.text).toBe(first.text);
    expect((await bob.api('/v1/balance')).body.balance_base_units).toBe(5 * 10_000_000 - 10_000);
  });

  it('refuses past the account limit with the same 429 and Retry-After, and logs each request with its route and account', async () => {
    const carol = await h.user();
    const s: Sent = { headers: json(carol.key, { 'x-request-id': 'carol-call' }), body: JSON.stringify({ service: 'no-such-service', payload: {} }) };
    let answers: Answer[] = [];
    for (let i = 0; i < 65 && !answers.some((a) => a.status === 429); i++) answers.push(await send(h.url, s));
    const limited = answers.at(-1)!;
    expect(limited.status).toBe(429);
    expect(seen(await send(expressUrl, { ...s, headers: { ...s.headers, 'x-request-id': 'carol-express' } }))).toEqual(seen(limited));
    answers = [];
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

