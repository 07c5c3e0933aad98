// The gateway's one JSON body reader (src/body.ts): readJsonBody on node:http
// (the call route's reader) and jsonBody, the same reader as express
// middleware for every other route. The call route's own answers are in
// call-http.test.ts; every route's refusals in fuzz.test.ts.
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import * as zlib from 'node:zlib';
import express, { type NextFunction, type Request, type Response } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BodyError, formBody, jsonBody, readJsonBody } from '../src/body.js';

let server: Server;
let base: string;
/** Resolved with what the raw reader settled with, per request (`x-probe` header). */
const settled = new Map<string, (outcome: unknown) => void>();
const settledWith = (probe: string) => new Promise((resolve) => settled.set(probe, resolve));

beforeAll(async () => {
  const app = express();
  app.post('/strict', jsonBody({ limit: '16kb' }), formBody({ limit: '16kb' }), (req, res) => res.json({ body: req.body ?? null }));
  app.post('/loose', jsonBody({ limit: 1024, strict: false }), (req, res) => res.json({ body: req.body ?? null }));
  // Two JSON parsers in a row: the second finds the body read and leaves it.
  app.post('/twice', jsonBody({ limit: 1024 }), jsonBody({ limit: 1024 }), (req, res) => res.json({ body: req.body ?? null }));
  app.use((err: BodyError, _req: Request, res: Response, _next: NextFunction) => res.status(err.status).json({ error: err.message, type: err.type }));
  server = createServer((req, res) => {
    if (req.url !== '/raw') return app(req, res);
    readJsonBody(req, { limit: 1024 }).then(
      (value) => {
        settled.get(String(req.headers['x-probe']))?.({ value });
        res.end(JSON.stringify({ value }));
      },
      (err: BodyError) => {
        settled.get(String(req.headers['x-probe']))?.({ status: err.status, error: err.message });
        res.writeHead(err.status).end(JSON.stringify({ error: err.message }));
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((r) => server?.close(r)));

async function post(path: string, body: string | Uint8Array | undefined, headers: Record<string, string> = { 'content-type': 'application/json' }) {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers,
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : new Uint8Array(body) }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('the JSON body reader', () => {
  it('takes only an object or an array at the top when strict (express routes), any JSON value when not (the call route)', async () => {
    expect(await post('/strict', ' \n{"a":1}')).toEqual({ status: 200, json: { body: { a: 1 } } });
    expect(await post('/strict', '[1]')).toEqual({ status: 200, json: { body: [1] } });
    for (const body of ['"x"', '1', 'null', ' true', '   '])
      expect(await post('/strict', body), body).toEqual({ status: 400, json: { error: 'invalid JSON body', type: 'entity.parse.failed' } });
    expect(await post('/loose', '"x"')).toEqual({ status: 200, json: { body: 'x' } });
    expect(await post('/loose', '')).toEqual({ status: 200, json: { body: {} } });
    expect(await post('/strict', '\ufeff{"bom":true}')).toEqual({ status: 200, json: { body: { bom: true } } });
  });

  it('leaves a body of another type to the next parser and a body already read alone; an empty body is {}', async () => {
    expect(await post('/strict', 'a=1&b=x', { 'content-type': 'application/x-www-form-urlencoded' })).toEqual({
      status: 200,
      json: { body: { a: '1', b: 'x' } },
    });
    expect(await post('/strict', 'plain', { 'content-type': 'text/plain' })).toEqual({ status: 200, json: { body: null } });
    expect(await post('/strict', undefined)).toEqual({ status: 200, json: { body: {} } });
    expect(await post('/twice', '{"once":1}')).toEqual({ status: 200, json: { body: { once: 1 } } });
  });

  it('counts the limit in bytes after any Content-Encoding is undone', async () => {
    expect((await post('/strict', JSON.stringify({ s: 'x'.repeat(16 * 1024 - 8) }))).status).toBe(200);
    expect(await post('/strict', JSON.stringify({ s: 'x'.repeat(16 * 1024) }))).toEqual({
      status: 413,
      json: { error: 'request body too large', type: 'entity.too.large' },
    });
    // A few hundred bytes that inflate past the limit are refused once the limit is passed.
    const bomb = gzipSync(JSON.stringify({ s: ' '.repeat(4 * 1024 * 1024) }));
    expect(bomb.length).toBeLessThan(8 * 1024);
    expect(await post('/loose', bomb, { 'content-type': 'application/json', 'content-encoding': 'gzip' })).toEqual({
      status: 413,
      json: { error: 'request body too large', type: 'entity.too.large' },
    });
    const zstd = (zlib as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;
    if (zstd)
      expect(await post('/loose', zstd(Buffer.from('{"z":1}')), { 'content-type': 'application/json', 'content-encoding': 'zstd' })).toEqual({
        status: 200,
        json: { body: { z: 1 } },
      });
  });

  it('settles when the client goes away halfway through a body', async () => {
    const outcome = settledWith('gone');
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${base}/raw`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '100', 'x-probe': 'gone' } });
      req.on('error', () => resolve());
      req.write('{"half":', () => setImmediate(() => req.destroy()));
    });
    expect(await outcome).toEqual({ status: 400, error: 'request aborted' });
  });
});
