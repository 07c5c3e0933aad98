import { findOperation } from '@farebox/contract';
import { parsePaymentCredential } from '@farebox/protocol';
import { enforceRateLimit, GatewayError, legacySink, type GatewayCore } from '@farebox/gateway-core';
import { recordRequest, requestIdFrom } from './access-log.js';
import { readApiBody } from './body.js';
import { browserPolicy } from './browser-policy.js';
import { compileTrust, createContext, type RequestContext, type RouteHandler } from './context.js';
import { admit, requestAuthenticator } from './credentials.js';
import { writeError } from './errors.js';
import { Reply, type HttpRequest, type HttpResponse } from './http.js';
import { Router } from './router.js';
import { accountRoutes } from './routes/accounts.js';
import { approvalRoutes } from './routes/approvals.js';
import { bazaarRoutes } from './routes/bazaar.js';
import { callRoute } from './routes/call.js';
import { contractRoutes } from './routes/contract.js';
import { mcpRoutes } from './routes/mcp.js';
import { oauthRoutes } from './routes/oauth.js';
import { operationsRoutes } from './routes/operations.js';
import { x402Routes } from './routes/x402.js';

export const SESSION_COOKIE = 'farebox_session';
export const CSRF_COOKIE = 'farebox_csrf';

/**
 * One route of the handler. `v1` routes are served behind the one `/v1`
 * chain: the credential (`requestAuthenticator`), the account's and the
 * OAuth client's limits and the credential's reach (`admit`), then the body
 * (`api`: JSON up to 1 MiB or a form up to 64 KiB; `own`: the route reads
 * it). Other routes are open and do their own checks.
 */
export interface RouteSpec {
  method: string;
  path: string;
  v1?: { body: 'api' | 'own' };
  handle: RouteHandler;
  /**
   * Served instead of the /v1 chain for a request that pays for itself with MPP (`Authorization: Payment`, or no
   * credential and a channel named in `Farebox-Channel`): no account; the anonymous limit by address applies.
   */
  paid?: RouteHandler;
}

/** What every route module gets: the core, the browser policy, the session cookie's name and the error log. */
export interface RouteKit {
  core: GatewayCore;
  browser: ReturnType<typeof browserPolicy>;
  sessionCookie: string;
  csrfCookie: string;
  log: (message: string, err?: unknown) => void;
}

/** An answer for a request no route of the gateway takes: the host may serve it (the dashboard's files), else it is this 404. */
export interface UnmatchedResponse extends HttpResponse {
  unmatched: true;
  /** Writes the request's access-log line and metrics (route `unmatched`) once the host has answered it with `status`. */
  answered(status: number): void;
}

export interface GatewayHandlerOptions {
  /** Where unexpected errors go (default: the core's logger at `error`). */
  log?: (message: string, err?: unknown) => void;
}

/** The gateway's HTTP surface: every request in, its answer out. */
export type GatewayHandler = (req: HttpRequest) => Promise<HttpResponse | UnmatchedResponse>;

/**
 * The gateway's one HTTP handler over a {@link GatewayCore}: every operation
 * of `@farebox/contract` (the call included), the account routes, OAuth
 * (metadata, registration, token, revocation, the sign-in and consent
 * pages), the approval pages, the x402 facilitator and bazaar, health,
 * metrics, the OpenAPI document and `/mcp`. Request ids, security headers,
 * authentication, limits, body rules, the error table and the access log
 * are here, once; a host only carries bytes (node.ts).
 */
export function createGatewayHandler(core: GatewayCore, options: GatewayHandlerOptions = {}): GatewayHandler {
  const log = options.log ?? legacySink(core.logger, 'error');
  const trust = compileTrust(core.config.trustProxy);
  const browser = browserPolicy(core.config);
  const authenticate = requestAuthenticator(core, browser, SESSION_COOKIE);
  const kit: RouteKit = { core, browser, sessionCookie: SESSION_COOKIE, csrfCookie: CSRF_COOKIE, log };
  const router = new Router<RouteSpec>();
  // The order decides where two templates take the same path: open operations before the /v1 chain's.
  for (const spec of [
    callRoute(kit),
    ...accountRoutes(kit),
    ...contractRoutes(kit),
    ...operationsRoutes(kit),
    ...x402Routes(kit),
    ...bazaarRoutes(kit),
    ...oauthRoutes(kit),
    ...approvalRoutes(kit),
    ...mcpRoutes(kit),
  ])
    router.add(spec.method, spec.path, spec);

  /** The /v1 chain: who, whether they may, then the body. */
  async function v1(ctx: RequestContext, path: string, body: 'api' | 'own' | 'none'): Promise<void> {
    const principal = await authenticate(ctx.req, ctx.ip);
    // Named in the access log even when its limits or its reach refuse it.
    ctx.principal = principal;
    await admit(core, principal, ctx.req.method, path.slice(3) || '/');
    if (body === 'api') ctx.body = await readApiBody(ctx.req);
  }

  return async function handle(req: HttpRequest): Promise<HttpResponse | UnmatchedResponse> {
    const requestId = requestIdFrom(req.headers);
    const reply = new Reply();
    reply.set('x-request-id', requestId);
    reply.set('x-content-type-options', 'nosniff');
    reply.set('referrer-policy', 'no-referrer');
    const t0 = performance.now();
    const ctx = createContext(req, reply, requestId, trust);
    let route = 'unmatched';
    try {
      const match = router.match(req.method, ctx.path);
      if (!match) {
        if (!isV1(ctx.path)) {
          const methods = router.methodsFor(ctx.path);
          if (req.method === 'OPTIONS' && methods.length > 0) {
            reply.set('allow', methods.join(', '));
            reply.text(200, methods.join(','), 'text/plain; charset=utf-8');
          } else {
            const record = (status: number) =>
              recordRequest(core, {
                requestId,
                method: req.method,
                route,
                status,
                ms: performance.now() - t0,
                ip: ctx.ip,
                principal: undefined,
                refusedBy: undefined,
              });
            return { status: 404, headers: reply.headers, body: undefined, unmatched: true, answered: record };
          }
        } else {
          // Every /v1 path is behind the credential, a path that names no operation too.
          route = findOperation(req.method, ctx.path)?.path ?? route;
          await v1(ctx, ctx.path, 'none');
          throw new GatewayError('NOT_FOUND', 'not found');
        }
      } else {
        route = match.route.path;
        ctx.params = match.params;
        const spec = match.route.handle;
        if (spec.paid && core.mpp.calls && paysItself(ctx.req)) {
          // A voucher's channel is limited as an account is, and so is its address (a credential may name any channel);
          // a request for a challenge, by its address at the anonymous rate (it may make the gateway read the chain).
          const channel = paymentChannelOf(ctx.req);
          if (channel) {
            await enforceRateLimit(core.rateLimits, core.config.rateLimits.account, `channel-ip:${ctx.ip() ?? 'unknown'}`);
            await enforceRateLimit(core.rateLimits, core.config.rateLimits.account, `channel:${channel}`);
          } else await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, ctx.ip() ?? 'unknown');
          await spec.paid(ctx);
        } else {
          if (spec.v1) await v1(ctx, ctx.path, spec.v1.body);
          await spec.handle(ctx);
        }
      }
    } catch (thrown) {
      const refusal = writeError(reply, thrown, log);
      if (refusal.rateLimitRule !== undefined) ctx.rateLimitRule = refusal.rateLimitRule;
    }
    recordRequest(core, {
      requestId,
      method: req.method,
      route,
      status: reply.status,
      ms: performance.now() - t0,
      ip: ctx.ip,
      principal: ctx.principal,
      refusedBy: ctx.rateLimitRule,
    });
    return reply.toResponse();
  };
}

/** A request that pays with MPP: a `Payment` credential, or no credential at all and a channel to be offered a challenge on. */
function paysItself(req: HttpRequest): boolean {
  const auth = req.headers.authorization;
  if (typeof auth === 'string') return /^payment\s/i.test(auth);
  return typeof req.headers['farebox-channel'] === 'string' && !/(?:^|;\s*)farebox_session=/.test(String(req.headers.cookie ?? ''));
}

/** The channel a `Payment` credential's challenge names, when it is one. */
function paymentChannelOf(req: HttpRequest): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth !== 'string') return undefined;
  try {
    const channel = parsePaymentCredential(auth).challenge.request.channel;
    return typeof channel === 'string' && channel.length <= 64 ? channel : undefined;
  } catch {
    return undefined;
  }
}

const isV1 = (path: string) => path.length >= 3 && path.slice(0, 3).toLowerCase() === '/v1' && (path.length === 3 || path[3] === '/');

/** The per-IP limit of anonymous requests (open routes that cost the gateway work). */
export const limitAnonymous = (core: GatewayCore, ctx: RequestContext) => enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, ctx.ip());
