import type { IncomingMessage, ServerResponse } from 'node:http';
import proxyAddr from 'proxy-addr';
import { asDatabaseUnavailable, GatewayError, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { API_BODY_LIMIT, BodyError, hasBody, isJsonBody, readJsonBody, refuseBody, type JsonBodyOptions } from './body.js';
import { admit, type requestAuthenticator } from './credentials.js';
import { idempotencyKey, stringHeader } from './headers.js';
import { bodyErrorCode, errorJson, gatewayErrorAnswer, setSecurityHeaders } from './http.js';
import { recordRequest, requestIdFrom } from './observability.js';

const CALL_ROUTE = '/v1/call';
const CALL_BODY: JsonBodyOptions = { limit: API_BODY_LIMIT, strict: false };
export const CALL_NEEDS_JSON = 'POST /v1/call takes a JSON body (Content-Type: application/json)';

/**
 * True for the paths express's router would have matched to `/v1/call`
 * (it matches without regard to case and with or without a trailing slash),
 * with any query string.
 */
export function isCallPath(url: string | undefined): boolean {
  if (url === CALL_ROUTE) return true;
  if (url === undefined) return false;
  const q = url.indexOf('?');
  const path = (q === -1 ? url : url.slice(0, q)).toLowerCase();
  return path === CALL_ROUTE || path === `${CALL_ROUTE}/`;
}

export interface CallRouteOptions {
  /** The `/v1` credential reading (`requestAuthenticator` in credentials.ts): bearer, or session cookie with its browser checks. */
  authenticate: ReturnType<typeof requestAuthenticator>;
  /** Which proxies' `X-Forwarded-For` to believe (express's `trust proxy fn`): the client's address for the log and the anonymous limit. */
  trustProxy: (addr: string, i: number) => boolean;
  log: (message: string, err?: unknown) => void;
}

/**
 * `POST /v1/call`, the hot path of the gateway, answered on node:http alone:
 * express never sees it (`requestHandler` in app.ts sends it here; an app
 * mounted by someone else runs this first). Every such request, whatever its
 * credential or body, is answered here: the request id and security headers;
 * the credential (a bearer API key or OAuth token, or a session cookie with
 * its Host, Origin and CSRF checks: `requestAuthenticator`, shared with the
 * express router); the account and OAuth-client rate limits and the OAuth
 * scope (`admit`); the body through the gateway's one JSON reader
 * (`readJsonBody` in body.ts: charset, encodings, 1 MiB, nesting, UTF-8,
 * byte order mark, the text rule; a body of another type is a 415); the
 * call; the access-log line and metrics; the error table.
 *
 * It saves express's router, its body parser and its response helpers: about
 * a quarter of a millisecond per call on these machines (`pnpm bench breakdown`;
 * docs/performance.md).
 */
export function callRoute(core: GatewayCore, options: CallRouteOptions) {
  const { authenticate, trustProxy, log } = options;
  return function handle(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.method !== 'POST' || !isCallPath(req.url)) return false;
    serve(req, res).catch((err: unknown) => log('request failed', err));
    return true;
  };

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const requestId = requestIdFrom(req.headers);
    res.setHeader('X-Request-Id', requestId);
    setSecurityHeaders(res);
    const t0 = performance.now();
    const ip = () => proxyAddr(req, trustProxy);
    let principal: Principal | undefined;
    let refusedBy: string | undefined;
    res.once('finish', () => {
      recordRequest(core, { requestId, method: 'POST', route: CALL_ROUTE, status: res.statusCode, ms: performance.now() - t0, ip, principal, refusedBy });
    });
    try {
      principal = await authenticate(req, ip);
      await admit(core, principal, 'POST', '/call');
      const body = await readCallBody(req);
      const answer = await core.calls.call(principal, body, {
        idempotencyKey: idempotencyKey(req),
        maxCost: stringHeader(req, 'farebox-max-cost'),
        approvalId: stringHeader(req, 'farebox-approval'),
        requestId,
      });
      send(res, answer.status, answer.json);
    } catch (thrown) {
      // A lost database is a 503 with Retry-After, never a 500 (docs/api.md "Errors").
      const err = asDatabaseUnavailable(thrown) ?? thrown;
      if (err instanceof GatewayError) {
        // Once the call has its id, its error answer names it (`callId`, as the call result does).
        const answer = gatewayErrorAnswer(err, res, thrown);
        refusedBy = answer.rateLimitRule;
        return send(res, answer.status, answer.body);
      }
      if (err instanceof BodyError) return send(res, err.status, errorJson(bodyErrorCode(err.status), err.message));
      log('request failed', err);
      send(res, 500, errorJson('INTERNAL', 'internal error'));
    }
  }
}

/**
 * A call's body: JSON read by {@link readJsonBody} (any value: the call's
 * schema judges it), nothing when the request has none (the schema then
 * answers `service required`), and a 415 for a body of any other type (a
 * form cannot carry the JSON object `payload` is).
 */
function readCallBody(req: IncomingMessage): Promise<unknown> {
  if (!hasBody(req)) return Promise.resolve(undefined);
  if (isJsonBody(req)) return readJsonBody(req, CALL_BODY);
  if (req.headers['content-length'] === '0') return Promise.resolve(undefined);
  return refuseBody(req, 415, CALL_NEEDS_JSON, 'type.unsupported');
}

function send(res: ServerResponse, status: number, json: string): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}
