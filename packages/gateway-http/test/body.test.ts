// The gateway's body readers (src/body.ts), driven in process with HttpRequest
// records: a body is all its bytes (a Uint8Array) or an async generator that
// yields them chunk by chunk, as node:http delivers them. One section at the
// end runs them on a real loopback node:http server (toNodeListener), for what
// only a socket shows. The call route's answers over HTTP are in
// apps/gateway/test/call-http.test.ts; every route's refusals in fuzz.test.ts.
import { createServer, Agent, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BodyError, inputError, readApiBody, readBodyBytes, readFormBody, readJsonBody } from '../src/body.js';
import type { HttpRequest, HttpResponse } from '../src/http.js';
import { toNodeListener } from '../src/node.js';

/** A body sent chunk by chunk; `ended` turns true once the reader asked past its last chunk (it read the body to its end). */
interface Streamed {
  body: AsyncIterable<Uint8Array>;
  readonly ended: boolean;
  /** How many chunks the reader took. */
  readonly taken: number;
}

/** A body in chunks (strings as UTF-8); after them the generator throws `abort` when given: the client went away. */
function streamed(chunks: Array<string | Uint8Array>, abort?: Error): Streamed {
  const state = { ended: false, taken: 0 };
  async function* gen(): AsyncGenerator<Uint8Array> {
    for (const c of chunks) {
      state.taken++;
      yield typeof c === 'string' ? Buffer.from(c) : c;
    }
    if (abort) throw abort;
    state.ended = true;
  }
  return {
    body: gen(),
    get ended() {
      return state.ended;
    },
    get taken() {
      return state.taken;
    },
  };
}

/** `bytes` cut into pieces of `size` bytes. */
function pieces(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

/**
 * A POST with `body`: bytes or a string go as one whole body with their
 * Content-Length, a stream as a chunked one (no length), as node:http would
 * describe them. `headers` are added (lower-case names) and win.
 */
function post(body: string | Uint8Array | Streamed | undefined, headers: Record<string, string> = {}): HttpRequest {
  const framing: Record<string, string> =
    body === undefined
      ? {}
      : typeof body === 'string' || body instanceof Uint8Array
        ? { 'content-length': String(Buffer.byteLength(body)) }
        : { 'transfer-encoding': 'chunked' };
  return {
    method: 'POST',
    url: '/',
    headers: { 'content-type': 'application/json', ...framing, ...headers },
    body: body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : body instanceof Uint8Array ? body : body.body,
  };
}

/** What a reader refused with (a BodyError's status, message and type), or what it resolved. */
async function outcome(read: Promise<unknown>): Promise<{ value: unknown } | { status: number; error: string; type: string }> {
  try {
    return { value: await read };
  } catch (err) {
    if (!(err instanceof BodyError)) throw err;
    return { status: err.status, error: err.message, type: err.type };
  }
}

const TOO_LARGE = { status: 413, error: 'request body too large', type: 'entity.too.large' };
const INVALID = { status: 400, error: 'invalid JSON body', type: 'entity.parse.failed' };
const ABORTED = { status: 400, error: 'request aborted', type: 'request.aborted' };
const KIB16 = 16 * 1024;
const zstd = (zlib as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;

describe('the JSON body reader', () => {
  it('takes only an object or an array at the top when strict (every route but the call), any JSON value when not (the call)', async () => {
    const strict = (text: string) => outcome(readJsonBody(post(text), { limit: KIB16 }));
    const loose = (text: string) => outcome(readJsonBody(post(text), { limit: 1024, strict: false }));
    expect(await strict(' \n{"a":1}')).toEqual({ value: { a: 1 } });
    expect(await strict('[1]')).toEqual({ value: [1] });
    for (const text of ['"x"', '1', 'null', ' true', '   ']) expect(await strict(text), text).toEqual(INVALID);
    expect(await loose('"x"')).toEqual({ value: 'x' });
    expect(await loose('null')).toEqual({ value: null });
    // An empty body is {} either way; a UTF-8 byte order mark is dropped.
    expect(await loose('')).toEqual({ value: {} });
    expect(await strict('')).toEqual({ value: {} });
    expect(await strict('\ufeff{"bom":true}')).toEqual({ value: { bom: true } });
    expect(await loose('{"a":')).toEqual(INVALID);
  });

  it('reads a body once: the request keeps no body after it', async () => {
    const req = post('{"once":1}');
    expect(await readJsonBody(req, { limit: 1024 })).toEqual({ once: 1 });
    expect(req.body).toBeUndefined();
    const chunked = post(streamed(['{"once":', '2}']));
    expect(await readJsonBody(chunked, { limit: 1024 })).toEqual({ once: 2 });
    expect(chunked.body).toBeUndefined();
  });

  it('takes JSON in UTF-8 only: any other charset is a 415, UTF-8 in any spelling is read', async () => {
    for (const type of ['application/json; charset=utf-16', 'application/json; charset=latin1', 'application/json;charset=ISO-8859-1'])
      expect(await outcome(readJsonBody(post(Buffer.from('{"a":1}', 'latin1'), { 'content-type': type }), { limit: 1024 })), type).toEqual({
        status: 415,
        error: 'JSON bodies must be UTF-8',
        type: 'charset.unsupported',
      });
    for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf-8"', 'application/json; Charset=utf-8 ; x=y'])
      expect(await outcome(readJsonBody(post('{"é":"ü"}', { 'content-type': type }), { limit: 1024 })), type).toEqual({ value: { é: 'ü' } });
  });

  it('puts a body back together from its chunks, a character cut between two of them included', async () => {
    const text = JSON.stringify({ text: 'héllo wörld ✓ 😀', n: [1, 2, 3] });
    const bytes = Buffer.from(text);
    for (const size of [1, 2, 3, 7, 64]) {
      const s = streamed(pieces(bytes, size));
      expect(await readJsonBody(post(s), { limit: 1024 }), `pieces of ${size}`).toEqual(JSON.parse(text));
      expect(s.ended).toBe(true);
    }
    // Compressed, then cut: the pieces are inflated as they come.
    const gz = zlib.gzipSync(bytes);
    expect(await readJsonBody(post(streamed(pieces(gz, 5)), { 'content-encoding': 'gzip' }), { limit: 1024 })).toEqual(JSON.parse(text));
  });

  it('counts the limit in bytes, said in Content-Length or counted as chunks come', async () => {
    const fits = JSON.stringify({ s: 'x'.repeat(KIB16 - 8) });
    expect(Buffer.byteLength(fits)).toBe(KIB16);
    const over = JSON.stringify({ s: 'x'.repeat(KIB16 - 7) });
    expect(await readJsonBody(post(fits), { limit: KIB16 })).toEqual(JSON.parse(fits));
    expect(await outcome(readJsonBody(post(over), { limit: KIB16 }))).toEqual(TOO_LARGE);
    // Chunked: the same limit, counted.
    expect(await readJsonBody(post(streamed(pieces(Buffer.from(fits), 1000))), { limit: KIB16 })).toEqual(JSON.parse(fits));
    expect(await outcome(readJsonBody(post(streamed(pieces(Buffer.from(over), 1000))), { limit: KIB16 }))).toEqual(TOO_LARGE);
    // A Content-Length over the limit is refused whatever the bytes.
    expect(await outcome(readJsonBody(post('{}', { 'content-length': String(KIB16 + 1) }), { limit: KIB16 }))).toEqual(TOO_LARGE);
    // Characters count as their UTF-8 bytes: 8,192 two-byte characters are 16 KiB and more.
    expect(await outcome(readJsonBody(post(JSON.stringify({ s: 'é'.repeat(KIB16 / 2) })), { limit: KIB16 }))).toEqual(TOO_LARGE);
  });

  it('undoes gzip, deflate and br (and zstd where Node has it), and counts the limit after decoding', async () => {
    const fits = Buffer.from(JSON.stringify({ s: 'x'.repeat(KIB16 - 8) }));
    const over = Buffer.from(JSON.stringify({ s: 'x'.repeat(KIB16 - 7) }));
    // A few hundred bytes that inflate to 4 MiB: refused once the limit is passed.
    const bomb = Buffer.from(JSON.stringify({ s: ' '.repeat(4 * 1024 * 1024) }));
    const codings: Array<[string, (b: Buffer) => Buffer]> = [
      ['gzip', zlib.gzipSync],
      ['deflate', zlib.deflateSync],
      ['br', zlib.brotliCompressSync],
      ['GZIP', zlib.gzipSync],
      ...(zstd ? ([['zstd', zstd]] as Array<[string, (b: Buffer) => Buffer]>) : []),
    ];
    for (const [coding, compress] of codings) {
      const headers = { 'content-encoding': coding };
      expect(await readJsonBody(post(compress(Buffer.from('{"z":1}')), headers), { limit: 1024 }), coding).toEqual({ z: 1 });
      // Compressed, far under the limit; decoded, exactly at it or one byte past.
      expect(compress(fits).length).toBeLessThan(1024);
      expect(await readJsonBody(post(compress(fits), headers), { limit: KIB16 }), coding).toEqual(JSON.parse(fits.toString()));
      expect(await outcome(readJsonBody(post(compress(over), headers), { limit: KIB16 })), coding).toEqual(TOO_LARGE);
      const packed = compress(bomb);
      expect(packed.length).toBeLessThan(8 * 1024);
      const s = streamed(pieces(packed, 256));
      expect(await outcome(readJsonBody(post(s, headers), { limit: KIB16, strict: false })), coding).toEqual(TOO_LARGE);
      expect(s.ended, coding).toBe(true);
    }
    expect(await readJsonBody(post('{"i":1}', { 'content-encoding': 'identity' }), { limit: 1024 })).toEqual({ i: 1 });
  });

  it('refuses an encoding it does not know (415) and bytes that are not what their encoding says (400)', async () => {
    expect(await outcome(readJsonBody(post('{"a":1}', { 'content-encoding': 'x-unknown' }), { limit: 1024 }))).toEqual({
      status: 415,
      error: 'unsupported body encoding',
      type: 'encoding.unsupported',
    });
    // Two codings in a row are not taken either.
    expect(await outcome(readJsonBody(post(zlib.gzipSync(zlib.gzipSync('{}')), { 'content-encoding': 'gzip, gzip' }), { limit: 1024 }))).toMatchObject({
      status: 415,
    });
    for (const coding of ['gzip', 'deflate', 'br'])
      expect(await outcome(readJsonBody(post('{"plain":"json"}', { 'content-encoding': coding }), { limit: 1024 })), coding).toEqual({
        status: 400,
        error: `invalid ${coding} body`,
        type: 'encoding.invalid',
      });
    // A gzip body cut short.
    const cut = zlib.gzipSync('{"a":"long enough to be cut"}');
    expect(await outcome(readJsonBody(post(cut.subarray(0, cut.length - 6), { 'content-encoding': 'gzip' }), { limit: 1024 }))).toEqual({
      status: 400,
      error: 'invalid gzip body',
      type: 'encoding.invalid',
    });
  });

  it('reads a refused body to its end before it throws, so the client is answered once it has sent everything', async () => {
    const big = pieces(Buffer.from(JSON.stringify({ s: 'x'.repeat(4096) })), 512);
    const cases: Array<[string, (s: Streamed) => HttpRequest, unknown]> = [
      ['a Content-Length over the limit', (s) => post(s, { 'content-length': '4200' }), TOO_LARGE],
      ['a chunked body over the limit', (s) => post(s), TOO_LARGE],
      ['a gzip body over the limit once inflated', (s) => post(s, { 'content-encoding': 'gzip' }), TOO_LARGE],
      ['a charset other than UTF-8', (s) => post(s, { 'content-type': 'application/json; charset=utf-16' }), { status: 415 }],
      ['an unknown encoding', (s) => post(s, { 'content-encoding': 'compress' }), { status: 415 }],
      ['bytes that are not gzip', (s) => post(s, { 'content-encoding': 'gzip' }), { status: 400, error: 'invalid gzip body' }],
    ];
    for (const [name, request, refusal] of cases) {
      const chunks = name.startsWith('a gzip') ? pieces(zlib.gzipSync(' '.repeat(64 * 1024)), 64) : big;
      const s = streamed(chunks);
      expect(await outcome(readJsonBody(request(s), { limit: 1024 })), name).toMatchObject(refusal as object);
      expect([s.ended, s.taken], name).toEqual([true, chunks.length]);
    }
    // A form refused for its charset too.
    const form = streamed(['a=1&', 'b=2']);
    expect(await outcome(readFormBody(post(form, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-16' }), { limit: 1024 }))).toMatchObject({
      status: 415,
    });
    expect(form.ended).toBe(true);
  });

  it('settles with 400 request aborted when the client goes away halfway through a body', async () => {
    const gone = () => new Error('aborted');
    expect(await outcome(readJsonBody(post(streamed(['{"half":'], gone())), { limit: 1024 }))).toEqual(ABORTED);
    expect(await outcome(readJsonBody(post(streamed([], gone())), { limit: 1024 }))).toEqual(ABORTED);
    const gz = zlib.gzipSync('{"half":"of a gzip body"}');
    expect(await outcome(readJsonBody(post(streamed([gz.subarray(0, 10)], gone()), { 'content-encoding': 'gzip' }), { limit: 1024 }))).toEqual(ABORTED);
    expect(await outcome(readBodyBytes(post(streamed(['a', 'b'], gone())), 1024))).toEqual(ABORTED);
    expect(await outcome(readFormBody(post(streamed(['a=1&b'], gone())), { limit: 1024 }))).toEqual(ABORTED);
    // Going away while a refused body is read off: the refusal stands.
    expect(
      await outcome(readJsonBody(post(streamed(['{"a":'], gone()), { 'content-type': 'application/json; charset=utf-16' }), { limit: 1024 })),
    ).toMatchObject({ status: 415, error: 'JSON bodies must be UTF-8' });
  });

  it('answers each refusal with its status and a message for the client (inputError)', async () => {
    const answer = async (read: Promise<unknown>) => {
      try {
        await read;
      } catch (err) {
        return inputError(err);
      }
      throw new Error('the reader took the body');
    };
    expect(await answer(readJsonBody(post('{"a":'), { limit: 1024 }))).toEqual({ status: 400, message: 'invalid JSON body' });
    expect(await answer(readJsonBody(post('x'.repeat(2000)), { limit: 1024 }))).toEqual({ status: 413, message: 'request body too large' });
    expect(await answer(readJsonBody(post('{}', { 'content-type': 'application/json; charset=utf-16' }), { limit: 1024 }))).toEqual({
      status: 415,
      message: 'JSON bodies must be UTF-8',
    });
    expect(await answer(readJsonBody(post('{}', { 'content-encoding': 'x-unknown' }), { limit: 1024 }))).toEqual({
      status: 415,
      message: 'unsupported body encoding',
    });
    expect(await answer(readJsonBody(post(`${'['.repeat(65)}${']'.repeat(65)}`), { limit: 1024 }))).toEqual({
      status: 400,
      message: 'JSON nested too deeply (max depth 64)',
    });
    expect(await answer(readJsonBody(post('{"a":"\\u0001"}'), { limit: 1024 }))).toEqual({
      status: 400,
      message: 'invalid a: control character U+0001 not allowed',
    });
    expect(await answer(readJsonBody(post(streamed(['{'], new Error('aborted'))), { limit: 1024 }))).toEqual({ status: 400, message: 'request aborted' });
    expect(await answer(readJsonBody(post('{"n":1e400}'), { limit: 1024 }))).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^the number 1e400 /),
    });
  });
});

describe('the API body reader (readApiBody)', () => {
  it('reads JSON (any value, any case of its type) or a form, and nothing for no body or another type', async () => {
    expect(await readApiBody(post('{"a":1}'))).toEqual({ a: 1 });
    expect(await readApiBody(post('"x"', { 'content-type': 'Application/JSON; charset=UTF-8' }))).toBe('x');
    expect(await readApiBody(post(streamed(['[1,', '2]'])))).toEqual([1, 2]);
    expect(await readApiBody(post('a=1&b=x', { 'content-type': 'application/x-www-form-urlencoded' }))).toEqual({ a: '1', b: 'x' });
    expect(await readApiBody(post('plain', { 'content-type': 'text/plain' }))).toBeUndefined();
    expect(await readApiBody(post('{"a":1}', { 'content-type': '' }))).toBeUndefined();
    // No Content-Length and no Transfer-Encoding: no body, whatever the record carries.
    expect(await readApiBody({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' } })).toBeUndefined();
    expect(await readApiBody(post(''))).toEqual({});
  });

  it('takes JSON up to 1 MiB and a form up to 64 KiB', async () => {
    const json = (n: number) => JSON.stringify({ s: 'x'.repeat(n - 8) });
    expect(await readApiBody(post(json(1024 * 1024)))).toEqual({ s: 'x'.repeat(1024 * 1024 - 8) });
    expect(await outcome(readApiBody(post(json(1024 * 1024 + 1))))).toEqual(TOO_LARGE);
    const form = (n: number) => `s=${'x'.repeat(n - 2)}`;
    const formType = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(await readApiBody(post(form(64 * 1024), formType))).toEqual({ s: 'x'.repeat(64 * 1024 - 2) });
    expect(await outcome(readApiBody(post(form(64 * 1024 + 1), formType)))).toEqual(TOO_LARGE);
  });
});

describe('the form body reader', () => {
  const FORM = 'application/x-www-form-urlencoded';
  const form = (body: string | Uint8Array | Streamed, type = FORM) => post(body, { 'content-type': type });

  it('reads fields as strings, a repeated field as an array of its values in order', async () => {
    expect(await readFormBody(form('a=1&b=x'), { limit: 1024 })).toEqual({ a: '1', b: 'x' });
    expect(await readFormBody(form('tag=a&x=1&tag=b&tag=c'), { limit: 1024 })).toEqual({ tag: ['a', 'b', 'c'], x: '1' });
    expect(await readFormBody(form('q=a+b%26c%3D&empty=&flag'), { limit: 1024 })).toEqual({ q: 'a b&c=', empty: '', flag: '' });
    expect(await readFormBody(form('name=caf%C3%A9'), { limit: 1024 })).toEqual({ name: 'café' });
    expect(await readFormBody(form(streamed(['na', 'me=caf\u00e9&n', '=2'])), { limit: 1024 })).toEqual({ name: 'café', n: '2' });
    expect(await readFormBody(form(''), { limit: 1024 })).toEqual({});
    // A field named like an Object property is a field like any other.
    expect(Object.entries(await readFormBody(form('__proto__=x&constructor=y'), { limit: 1024 }))).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y'],
    ]);
  });

  it('reads UTF-8 and ISO-8859-1 bodies; any other charset is a 415', async () => {
    expect(await readFormBody(form(Buffer.from('name=caf\u00e9', 'latin1'), `${FORM}; charset=ISO-8859-1`), { limit: 1024 })).toEqual({ name: 'café' });
    expect(await readFormBody(form('name=caf\u00e9', `${FORM}; charset=UTF-8`), { limit: 1024 })).toEqual({ name: 'café' });
    for (const charset of ['utf-16', 'windows-1252', 'latin1'])
      expect(await outcome(readFormBody(form('a=1', `${FORM}; charset=${charset}`), { limit: 1024 })), charset).toEqual({
        status: 415,
        error: `unsupported charset "${charset.toUpperCase()}"`,
        type: 'charset.unsupported',
      });
  });

  it('refuses more pairs than parameterLimit (413, 1,000 by default) and a body over the limit', async () => {
    const pairs = (n: number) => Array.from({ length: n }, (_, i) => `p${i}=${i}`).join('&');
    const tooMany = { status: 413, error: 'too many parameters', type: 'parameters.too.many' };
    expect(Object.keys(await readFormBody(form(pairs(3)), { limit: 1024, parameterLimit: 3 }))).toHaveLength(3);
    expect(await outcome(readFormBody(form(pairs(4)), { limit: 1024, parameterLimit: 3 }))).toEqual(tooMany);
    expect(Object.keys(await readFormBody(form(pairs(1000)), { limit: 64 * 1024 }))).toHaveLength(1000);
    expect(await outcome(readFormBody(form(pairs(1001)), { limit: 64 * 1024 }))).toEqual(tooMany);
    expect(await outcome(readFormBody(form(`a=${'x'.repeat(1024)}`), { limit: 1024 }))).toEqual(TOO_LARGE);
    const gz = zlib.gzipSync(`a=${'x'.repeat(2048)}`);
    expect(await outcome(readFormBody(post(gz, { 'content-type': FORM, 'content-encoding': 'gzip' }), { limit: 1024 }))).toEqual(TOO_LARGE);
  });

  it('refuses a value or a field name that breaks the text rule (400 naming it)', async () => {
    const unsafe = (error: string) => ({ status: 400, error, type: 'entity.text.unsafe' });
    expect(await outcome(readFormBody(form('a=ok&b=%00'), { limit: 1024 }))).toEqual(unsafe('invalid b: control character U+0000 not allowed'));
    expect(await outcome(readFormBody(form('tag=a&tag=%1B'), { limit: 1024 }))).toEqual(unsafe('invalid tag[1]: control character U+001B not allowed'));
    expect(await outcome(readFormBody(form('k%7F=1'), { limit: 1024 }))).toEqual(unsafe('invalid field name: control character U+007F not allowed'));
    expect(await outcome(readFormBody(form('c1=%C2%85'), { limit: 1024 }))).toEqual(unsafe('invalid c1: control character U+0085 not allowed'));
    // Tab, line feed and carriage return are text.
    expect(await readFormBody(form('t=a%09b%0D%0Ac'), { limit: 1024 })).toEqual({ t: 'a\tb\r\nc' });
  });
});

describe('the readers on node:http (toNodeListener)', () => {
  let server: Server;
  let base: string;
  /** Resolved with what the reader settled with, per request (`x-probe` header). */
  const settled = new Map<string, (outcome: unknown) => void>();
  const settledWith = (probe: string) => new Promise((resolve) => settled.set(probe, resolve));

  beforeAll(async () => {
    // A host handler of this test: the JSON reader with a 1 KiB limit, its answer or its refusal as JSON.
    const handler = async (req: HttpRequest): Promise<HttpResponse> => {
      const result = await outcome(readJsonBody(req, { limit: 1024 }));
      settled.get(String(req.headers['x-probe']))?.(result);
      return { status: 'status' in result ? result.status : 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(result) };
    };
    server = createServer(toNodeListener(handler));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise((r) => server?.close(r)));

  /** Sends a POST on `agent`: `parts` are written one by one, `pause` ms apart; `early` is true when the answer came before the last one was sent. */
  function send(agent: Agent, parts: string[], headers: Record<string, string>, pause = 0) {
    return new Promise<{ status: number; json: unknown; reusedSocket: boolean; early: boolean }>((resolve, reject) => {
      let sentAll = false;
      const req = httpRequest(`${base}/`, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
        const early = !sentAll;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, json: JSON.parse(Buffer.concat(chunks).toString()), reusedSocket: req.reusedSocket, early }));
      });
      req.on('error', reject);
      (async () => {
        for (const [i, part] of parts.entries()) {
          if (i > 0 && pause) await new Promise((r) => setTimeout(r, pause));
          req.write(part);
        }
        sentAll = true;
        req.end();
      })().catch(reject);
    });
  }

  it('answers a refused body once the client has sent all of it, and the connection carries the next request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await send(agent, ['{"first":1}'], {})).toMatchObject({ status: 200, json: { value: { first: 1 } }, reusedSocket: false });
      const part = 'x'.repeat(600);
      const refusals: Array<[string, string[], Record<string, string>]> = [
        ['a Content-Length over the limit', [`{"s":"${part}`, part, '"}'], { 'content-length': String(6 + 2 * part.length + 2) }],
        ['a chunked body over the limit', [`{"s":"${part}`, part, '"}'], {}],
        ['a charset other than UTF-8', ['{"s":', '"x"}'], { 'content-type': 'application/json; charset=utf-16' }],
      ];
      for (const [name, parts, headers] of refusals) {
        const refused = await send(agent, parts, headers, 100);
        expect(refused.status, name).toBeGreaterThanOrEqual(413);
        expect([refused.early, refused.reusedSocket], name).toEqual([false, true]);
        expect(await send(agent, ['{"next":1}'], {}), name).toMatchObject({ status: 200, json: { value: { next: 1 } }, reusedSocket: true });
      }
    } finally {
      agent.destroy();
    }
  });

  it('settles with 400 request aborted when the client goes away halfway through a body', async () => {
    const result = settledWith('gone');
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${base}/`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '100', 'x-probe': 'gone' } });
      req.on('error', () => resolve());
      req.write('{"half":', () => setImmediate(() => req.destroy()));
    });
    expect(await result).toEqual(ABORTED);
  });
});
