import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { Express, NextFunction, Request, Response } from 'express';
import { findOperation } from '@farebox/contract';
import { safeEqual, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { bearerToken } from './browser-policy.js';

/** `X-Request-Id` a caller may send: 1 to 128 visible characters of a safe set (anything else is replaced). */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The caller's `X-Request-Id` when well-formed, else a new one. */
export function requestIdFrom(headers: IncomingHttpHeaders): string {
  const sent = headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
}
const principals = new WeakMap<Request, Principal>();

/** Tells the access log who made the request (set once authenticated). */
export function notePrincipal(req: Request, principal: Principal): void {
  principals.set(req, principal);
}

/** The route template a request matched (`/v1/agents/:service`), never the raw path with its ids and query. */
function routeOf(req: Request): string {
  const path = req.route?.path;
  if (typeof path === 'string' && req.baseUrl) return `${req.baseUrl}${path}`;
  // Refused inside the `/v1` router (no or an invalid credential, a handler's 403), a request has left the router
  // when it is logged (`baseUrl` is '' again): its route is the contract's operation for the path it was sent to.
  const op = findOperation(req.method, req.originalUrl.split('?')[0] ?? '');
  if (op) return op.path;
  if (typeof path === 'string') return path;
  // The embedded devnet (its RPC, Horizon, friendbot, explorer) is one route for the log and the metrics.
  if (req.originalUrl === '/devnet' || req.originalUrl.startsWith('/devnet/') || req.originalUrl.startsWith('/devnet?')) return '/devnet/*';
  return 'unmatched';
}

/**
 * Routes whose requests are the stack's own traffic rather than its users':
 * the embedded devnet (the gateway's and the services' own Stellar clients
 * poll it every half second) and the health probes. Their lines are written
 * at `debug` (`FAREBOX_LOG_LEVEL=debug` shows them); every other request at `info`.
 */
const QUIET_ROUTES = new Set(['/devnet/*', '/health', '/health/ready']);

/**
 * Request ids and the access log: every answer carries `X-Request-Id`, and
 * each request writes one line (request id, method, route template,
 * status, duration, principal kind and account id; never a credential, a
 * cookie, a body or a query string) and its HTTP metrics.
 */
export function requestContext(core: GatewayCore) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const id = requestIdFrom(req.headers);
    res.setHeader('X-Request-Id', id);
    const t0 = performance.now();
    res.once('finish', () => {
      const refusedBy = res.locals.rateLimitRule;
      recordRequest(core, {
        requestId: id,
        method: req.method,
        route: routeOf(req),
        status: res.statusCode,
        ms: performance.now() - t0,
        ip: () => req.ip,
        principal: principals.get(req),
        refusedBy: typeof refusedBy === 'string' ? refusedBy : undefined,
      });
    });
    next();
  };
}

/** One answered request, as the access log and the HTTP metrics see it. */
export interface AnsweredRequest {
  requestId: string;
  method: string;
  /** The route template (`/v1/agents/:service`), or `unmatched`. */
  route: string;
  status: number;
  ms: number;
  /** The client's address (read only when the line is written). */
  ip: () => string | undefined;
  principal: Principal | undefined;
  /** The rate-limit rule that refused the request, if one did. */
  refusedBy: string | undefined;
}

/** The HTTP metrics and the access-log line of one request (every route, the call route on node:http too). */
export function recordRequest({ logger, metrics }: Pick<GatewayCore, 'logger' | 'metrics'>, r: AnsweredRequest): void {
  metrics.httpRequests.inc({ route: r.route, method: r.method, status: String(r.status) });
  metrics.httpDuration.observe({ route: r.route, method: r.method }, r.ms / 1000);
  if (r.refusedBy !== undefined) metrics.rateLimited.inc({ rule: r.refusedBy });
  const level = QUIET_ROUTES.has(r.route) ? 'debug' : 'info';
  if (!logger.isLevelEnabled(level)) return;
  const p = r.principal;
  logger[level](
    {
      event: 'request',
      reqId: r.requestId,
      method: r.method,
      route: r.route,
      status: r.status,
      ms: Math.round(r.ms * 100) / 100,
      ip: r.ip(),
      ...(p ? { principal: p.via, accountId: p.user.id, ...(p.clientId ? { clientId: p.clientId } : {}) } : {}),
      ...(r.refusedBy !== undefined ? { rateLimit: r.refusedBy } : {}),
    },
    'request',
  );
}

/**
 * `GET /health/ready` (503 only when a required dependency is down, else 200
 * `ok` or `degraded` with each dependency's state and effect: docs/operations.md
 * "Health") and, when configured, `GET /metrics` behind `FAREBOX_METRICS_TOKEN`.
 */
export function mountOperations(app: Express, core: GatewayCore): void {
  app.get('/health/ready', (_req, res, next) => {
    core.platform.ready().then((r) => {
      res.status(r.ready ? 200 : 503).json(r);
    }, next);
  });
  const token = core.config.metricsToken;
  app.get('/metrics', (req, res, next) => {
    if (!token) {
      res.status(404).json({ error: 'not found', code: 'NOT_FOUND' });
      return;
    }
    const bearer = bearerToken(req);
    if (!bearer || !safeEqual(bearer, token)) {
      res
        .status(401)
        .setHeader('WWW-Authenticate', 'Bearer realm="metrics"')
        .json({ error: 'metrics need the bearer token (FAREBOX_METRICS_TOKEN)', code: 'UNAUTHENTICATED' });
      return;
    }
    core.metrics.registry.metrics().then((text) => {
      res.type(core.metrics.registry.contentType).send(text);
    }, next);
  });
}

/** `FAREBOX_METRICS_ADDR`: /metrics alone on its own address (no token: keep it on a private interface). */
export async function startMetricsServer(core: GatewayCore): Promise<Server | undefined> {
  const address = core.config.metricsAddress;
  if (!address) return undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found","code":"NOT_FOUND"}');
      return;
    }
    core.metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': core.metrics.registry.contentType }).end(text),
      (err: unknown) => {
        core.logger.error({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal error","code":"INTERNAL"}');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  return server;
}
