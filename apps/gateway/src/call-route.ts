import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from 'proxy-addr';
import { GatewayError, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { isUtf8 } from 'node:buffer';
import { API_BODY_LIMIT, BODY_TOO_LARGE, INVALID_JSON, JSON_BAD_UTF8, JSON_TOO_DEEP, jsonTooDeep, mayHoldUnsafeText, unsafeTextError } from './body.js';
import { bearerToken } from './browser-policy.js';
import { admit, principalForBearer } from './credentials.js';
import { idempotencyKey, stringHeader } from './headers.js';
import { gatewayErrorAnswer, setSecurityHeaders } from './http.js';
import { recordRequest, requestIdFrom } from './observability.js';

const CALL_ROUTE = '/v1/call';
/** `application/json`, optionally with `charset=utf-8`: the only bodies this route reads itself. */
const JSON_UTF8 = /^application\/json\s*(?:;\s*charset\s*=\s*(?:utf-8|"utf-8")\s*)?$/i;
const BOM = [0xef, 0xbb, 0xbf] as const;

/**
 * `POST /v1/call` answered without express: the hot path of the gateway.
 *
 * It takes the requests it can answer exactly as the express route would (a
 * bearer credential, a UTF-8 JSON body with a length or a chunked encoding,
 * no content encoding, the exact path) and returns `false` for every other
 * request, which express then answers (cookie sessions with their CSRF and
 * Origin checks, form posts, other charsets, compressed bodies, a trailing
 * slash). What it answers is the express route's answer: the same request id
 * and security headers, credential, rate limits and OAuth scope in the same
 * order, the same body rules and messages (`body.ts`), the same access-log
 * line and metrics, the same error table. `test/call-route.test.ts` sends the
 * same requests to both and compares.
 *
 * It saves express's router, its body parser and its response helpers: about
 * a quarter of a millisecond per call on these machines (`pnpm bench breakdown`).
 */
export function callRoute(core: GatewayCore, trustProxy: (addr: string, i: number) => boolean, log: (message: string, err?: unknown) => void) {
  return function handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'POST') return false;
    const url = req.url;
    if (url !== CALL_ROUTE && !(url !== undefined && url.startsWith(`${CALL_ROUTE}?`))) return false;
    const headers = req.headers;
    if (headers.authorization === undefined) return false;
    const type = headers['content-type'];
    if (type === undefined || !JSON_UTF8.test(type)) return false;
    const encoding = headers['content-encoding'];
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity') return false;
    // A request without a body is left to express, whose parser leaves `req.body` unset.
    if (headers['transfer-encoding'] === undefined && Number.isNaN(Number(headers['content-length'] ?? NaN))) return false;
    serve(req, res).catch((err: unknown) => log('request failed', err));
    return true;
  };

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = requestIdFrom(req.headers);
    res.setHeader('X-Request-Id', requestId);
    setSecurityHeaders(res);
    const t0 = performance.now();
    let principal: Principal | undefined;
    let refusedBy: string | undefined;
    res.once('finish', () => {
      recordRequest(core, {
        requestId,
        method: 'POST',
        route: CALL_ROUTE,
        status: res.statusCode,
        ms: performance.now() - t0,
        ip: () => proxyAddr(req, trustProxy),
        principal,
        refusedBy,
      });
    });
    try {
      principal = await principalForBearer(core, bearerToken(req) ?? null);
      await admit(core, principal, 'POST', '/call');
      const body = await readJson(req);
      if ('error' in body) return send(res, body.status, JSON.stringify({ error: body.error }));
      const answer = await core.calls.call(principal, body.value, { idempotencyKey: idempotencyKey(req), maxCost: stringHeader(req, 'farebox-max-cost'), requestId });
      send(res, answer.status, answer.json);
    } catch (err) {
      if (err instanceof GatewayError) {
        const answer = gatewayErrorAnswer(err, res);
        refusedBy = answer.rateLimitRule;
        return send(res, answer.status, answer.body);
      }
      log('request failed', err);
      send(res, 500, '{"error":"internal error"}');
    }
  }
}

function send(res: ServerResponse, status: number, json: string): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

type BodyResult = { value: unknown } | { status: number; error: string };

/**
 * The body as express's JSON parser (`jsonBody` in body.ts) takes it: at most
 * {@link API_BODY_LIMIT} bytes (a longer body is read off before the 413, as
 * the parser does), nesting checked on the bytes, a UTF-8 byte order mark
 * dropped, an empty body read as `{}`, bytes that are no UTF-8 or anything
 * JSON.parse refuses a 400, a string with a control character or an unpaired
 * surrogate a 400 naming it.
 */
function readJson(req: IncomingMessage): Promise<BodyResult> {
  return new Promise((resolve) => {
    const declared = req.headers['content-length'];
    const tooLarge = (): void => {
      req.removeAllListeners('data');
      req.resume();
      const done = () => resolve({ status: 413, error: BODY_TOO_LARGE });
      if (req.complete) done();
      else req.once('end', done).once('error', done);
    };
    if (declared !== undefined && Number(declared) > API_BODY_LIMIT) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > API_BODY_LIMIT) {
        settled = true;
        chunks.length = 0;
        return tooLarge();
      }
      chunks.push(chunk);
    });
    req.once('error', () => {
      if (settled) return;
      settled = true;
      resolve({ status: 400, error: 'request aborted' });
    });
    req.once('end', () => {
      if (settled) return;
      settled = true;
      let buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      if (jsonTooDeep(buf)) return resolve({ status: 400, error: JSON_TOO_DEEP });
      if (!isUtf8(buf)) return resolve({ status: 400, error: JSON_BAD_UTF8 });
      if (buf.length >= 3 && buf[0] === BOM[0] && buf[1] === BOM[1] && buf[2] === BOM[2]) buf = buf.subarray(3);
      if (buf.length === 0) return resolve({ value: {} });
      let value: unknown;
      try {
        value = JSON.parse(buf.toString('utf8'));
      } catch {
        return resolve({ status: 400, error: INVALID_JSON });
      }
      const bad = mayHoldUnsafeText(buf) ? unsafeTextError(value) : undefined;
      resolve(bad ? { status: 400, error: bad.message } : { value });
    });
  });
}
