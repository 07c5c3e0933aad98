import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProviderError } from './errors.js';
import type { PaidRequest } from './provider.js';
import { formatLimit, serialized, type ProviderResponse } from './response.js';

/** A running node:http server started by `provider.listen()`. */
export interface ListeningProvider {
  server: Server;
  address: AddressInfo;
  port: number;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  close(): Promise<void>;
}

/** The request shape the express adapter reads (express 4/5 and connect satisfy it). */
export type ExpressLikeRequest = IncomingMessage & { body?: unknown; ip?: string; originalUrl?: string };

/** Middleware as express and connect call it. */
export type ExpressMiddleware = (req: ExpressLikeRequest, res: ServerResponse, next: (err?: unknown) => void) => void;

interface Core {
  handle(request: PaidRequest): Promise<ProviderResponse>;
  bodyLimit: number;
}

type BodyResult = { ok: true; bytes: Uint8Array } | { ok: false; tooLarge: true } | { ok: false; tooLarge: false; error: Error };

/**
 * Reads a request body, refusing more than `limit` bytes before buffering
 * them: a declared Content-Length over the limit is refused at once, and a
 * chunked or mis-declared body is counted as it streams.
 */
function readBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ ok: false, tooLarge: true });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (result: BodyResult) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        finish({ ok: false, tooLarge: true });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => finish({ ok: true, bytes: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
    const onError = (error: Error) => finish({ ok: false, tooLarge: false, error });
    const onClose = () => finish({ ok: false, tooLarge: false, error: new Error('request aborted before its body was complete') });
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

function write(res: ServerResponse, response: ProviderResponse, closeConnection = false): void {
  let text = serialized.get(response);
  if (text === undefined) {
    try {
      text = JSON.stringify(response.body) ?? 'null';
    } catch {
      response = { status: 500, headers: { 'content-type': 'application/json; charset=utf-8' }, body: null };
      text = JSON.stringify({ error: 'response is not JSON-serialisable' });
    }
  }
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  res.setHeader('content-length', Buffer.byteLength(text));
  if (closeConnection) res.setHeader('connection', 'close');
  res.end(text);
}

/** Answers 413 and discards the rest of the body, so the client reads the answer instead of a reset. */
function refuseTooLarge(req: IncomingMessage, res: ServerResponse, limit: number): void {
  write(
    res,
    { status: 413, headers: { 'content-type': 'application/json; charset=utf-8' }, body: { error: `request body too large (limit ${formatLimit(limit)})` } },
    true,
  );
  req.resume();
}

function pathOf(url: string | undefined): string {
  if (!url) return '/';
  const q = url.indexOf('?');
  const p = q === -1 ? url : url.slice(0, q);
  return p.length > 1 ? p.replace(/\/+$/, '') : p || '/';
}

async function serveNode(
  core: Core,
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  ip: string | undefined,
  preParsed?: { body: unknown },
): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  let rawBody: Uint8Array | undefined;
  if (method === 'POST' && !preParsed) {
    const body = await readBody(req, core.bodyLimit);
    if (!body.ok) {
      if (body.tooLarge) return refuseTooLarge(req, res, core.bodyLimit);
      res.destroy(body.error);
      return;
    }
    rawBody = body.bytes;
  }
  const response = await core.handle({
    method,
    path,
    headers: req.headers,
    ...(rawBody ? { rawBody } : {}),
    ...(preParsed ? { body: preParsed.body } : {}),
    ...(ip !== undefined ? { ip } : {}),
  });
  write(res, response);
}

/** Starts a node:http server for the core; resolves once it listens. */
export function listenHttp(core: Core, port: number, host: string | undefined, onClose: () => void): Promise<ListeningProvider> {
  const server = createServer((req, res) => {
    serveNode(core, req, res, pathOf(req.url), req.socket.remoteAddress).catch((e: unknown) => {
      if (!res.headersSent) write(res, { status: 500, headers: {}, body: { error: e instanceof Error ? e.message : String(e) } });
      else res.destroy();
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new ProviderError('SERVER', `cannot listen on port ${port}: ${e.message}`, { port })));
    server.listen(port, host, () => {
      const address = server.address() as AddressInfo;
      const shownHost = host && host !== '0.0.0.0' && host !== '::' ? (host.includes(':') ? `[${host}]` : host) : '127.0.0.1';
      let closed: Promise<void> | undefined;
      resolve({
        server,
        address,
        port: address.port,
        url: `http://${shownHost}:${address.port}`,
        close() {
          closed ??= new Promise<void>((done, fail) => {
            server.close((err) => (err ? fail(new ProviderError('SERVER', `cannot close the server: ${err.message}`)) : done()));
            server.closeIdleConnections();
          }).finally(onClose);
          return closed;
        },
      });
    });
  });
}

/**
 * The express adapter: answers `POST <paid path>`, `GET /manifest` and
 * `GET /health`, and passes every other request to `next()`. It reads the raw
 * body itself (mount it before `express.json()`), or takes `req.body` when it
 * is a Buffer from `express.raw()`.
 */
export function createExpressMiddleware(core: Core & { routes: { paid: string; get: string[] } }): ExpressMiddleware {
  const gets = new Set(core.routes.get);
  return (req, res, next) => {
    const method = (req.method ?? 'GET').toUpperCase();
    const candidates = [pathOf(req.originalUrl ?? req.url), pathOf(req.url)];
    const path = candidates.find((p) => (method === 'POST' ? p === core.routes.paid : method === 'GET' && gets.has(p)));
    if (path === undefined) return next();
    const ip = req.ip ?? req.socket.remoteAddress;
    let work: Promise<void>;
    if (method === 'POST' && Buffer.isBuffer(req.body)) {
      const raw = req.body;
      work =
        raw.length > core.bodyLimit
          ? Promise.resolve(refuseTooLarge(req, res, core.bodyLimit))
          : core.handle({ method, path, headers: req.headers, rawBody: raw, ...(ip !== undefined ? { ip } : {}) }).then((r) => write(res, r));
    } else if (method === 'POST' && req.readableEnded) {
      // A body parser already consumed the stream: only the parsed value is left.
      work = serveNode(core, req, res, path, ip, { body: req.body });
    } else {
      work = serveNode(core, req, res, path, ip);
    }
    work.catch(next);
  };
}
