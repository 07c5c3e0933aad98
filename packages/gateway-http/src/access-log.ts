import { randomUUID } from 'node:crypto';
import type { GatewayCore, Principal } from '@farebox/gateway-core';
import type { HttpHeaders } from './http.js';

/** `X-Request-Id` a caller may send: 1 to 128 visible characters of a safe set (anything else is replaced). */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The caller's `X-Request-Id` when well-formed, else a new one. */
export function requestIdFrom(headers: HttpHeaders): string {
  const sent = headers['x-request-id'];
  return typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
}

/**
 * Routes whose requests are the stack's own traffic rather than its users':
 * the embedded devnet (the gateway's and the services' own Stellar clients
 * poll it every half second; the host logs its requests under this route)
 * and the health probes. Their lines are written at `debug`
 * (`FAREBOX_LOG_LEVEL=debug` shows them); every other request at `info`.
 */
const QUIET_ROUTES = new Set(['/devnet/*', '/health', '/health/ready']);

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

/** The HTTP metrics and the access-log line of one request (every request the handler answers, and the host's embedded devnet). */
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
