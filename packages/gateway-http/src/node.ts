import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { TLSSocket } from 'node:tls';
import { hasBody } from './body.js';
import type { GatewayHandler } from './handler.js';
import type { HttpRequest, HttpResponse } from './http.js';

/** A node:http request as the handler's record: its body is the request stream itself, read only by the route that takes it. */
export function fromNodeRequest(req: IncomingMessage): HttpRequest {
  return {
    method: req.method ?? 'GET',
    url: req.url ?? '/',
    headers: req.headers,
    body: hasBody(req) ? req : undefined,
    remoteAddress: req.socket.remoteAddress,
    encrypted: (req.socket as Partial<TLSSocket>).encrypted === true,
  };
}

/** Writes the handler's answer on a node:http response (a stream is piped, and stopped when the client goes). */
export function writeNodeResponse(res: ServerResponse, answer: HttpResponse): void {
  if (res.headersSent) return;
  res.statusCode = answer.status;
  for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
  const body = answer.body;
  if (body === undefined) return void res.end();
  if (typeof body === 'string' || body instanceof Uint8Array) {
    res.setHeader('content-length', typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    return void res.end(body);
  }
  const stream = Readable.fromWeb(body as NodeReadableStream<Uint8Array>);
  res.on('close', () => stream.destroy());
  stream.pipe(res);
}

const NOT_FOUND = '{"error":"not found","code":"NOT_FOUND"}';

export interface NodeListenerOptions {
  /**
   * Serves what no route of the gateway takes (the dashboard's files), with
   * the answer's request id and security headers already set; without it
   * such a request is a JSON 404.
   */
  fallback?: (req: IncomingMessage, res: ServerResponse) => void;
  /** Where a failure to answer goes (the handler answers every error it knows itself). */
  log?: (message: string, err?: unknown) => void;
}

/**
 * The handler as a node:http request listener (`http.createServer(toNodeListener(handler))`).
 * express mounts the handler with {@link nodeMiddleware} instead.
 */
export function toNodeListener(handler: GatewayHandler, options: NodeListenerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handler(fromNodeRequest(req)).then(
      (answer) => {
        if (!('unmatched' in answer)) return writeNodeResponse(res, answer);
        if (!options.fallback) {
          answer.answered(404);
          return writeNodeResponse(res, { ...answer, headers: { ...answer.headers, 'content-type': 'application/json; charset=utf-8' }, body: NOT_FOUND });
        }
        for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
        res.once('finish', () => answer.answered(res.statusCode));
        options.fallback(req, res);
      },
      (err: unknown) => {
        options.log?.('request failed', err);
        writeNodeResponse(res, {
          status: 500,
          headers: { 'content-type': 'application/json; charset=utf-8' },
          body: '{"error":"internal error","code":"INTERNAL"}',
        });
      },
    );
  };
}

/** The handler as express middleware (`app.use(nodeMiddleware(handler))`): what no route takes goes on to the next middleware. */
export function nodeMiddleware(handler: GatewayHandler): (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void {
  return (req, res, next) => {
    handler(fromNodeRequest(req)).then((answer) => {
      if (!('unmatched' in answer)) return writeNodeResponse(res, answer);
      for (const [k, v] of Object.entries(answer.headers)) res.setHeader(k, v);
      res.once('finish', () => answer.answered(res.statusCode));
      next();
    }, next);
  };
}
