import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { GatewayError, enforceRateLimit, legacySink, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { API_BODY_LIMIT, formBody, jsonBody } from './body.js';
import { callRoute } from './call-route.js';
import { idempotencyKey, stringHeader } from './headers.js';
import { bearerToken, browserPolicy } from './browser-policy.js';
import { errorHandler, readCookies, route, setSecurityHeaders } from './http.js';
import { admit, principalForBearer } from './credentials.js';
import { mcpRoutes } from './mcp-routes.js';
import { oauthRoutes } from './oauth-routes.js';
import { mountContractRoutes } from './contract-routes.js';
import { mountOperations, notePrincipal, requestContext, requestIdOf } from './observability.js';
import { openApiDocument } from './openapi.js';

export const SESSION_COOKIE = 'farebox_session';
export const CSRF_COOKIE = 'farebox_csrf';
const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

const principals = new WeakMap<Request, Principal>();

export interface AppOptions {
  /** Extra routers mounted before the API (the embedded devnet, the dashboard, OAuth, MCP). */
  mount?: (app: express.Express) => void;
  log?: (message: string, err?: unknown) => void;
  /**
   * Answer `POST /v1/call` with bearer credentials and JSON bodies without
   * express (`call-route.ts`; default true). False sends every call through
   * the express route, which answers the same (the tests compare the two).
   */
  fastCallRoute?: boolean;
}

const callRoutes = new WeakMap<express.Express, (req: IncomingMessage, res: ServerResponse) => boolean>();

/**
 * The gateway's request handler for `http.createServer`: calls that the
 * express-free call route takes go straight to it, everything else to `app`.
 */
export function requestHandler(app: express.Express): (req: IncomingMessage, res: ServerResponse) => void {
  const fast = callRoutes.get(app);
  if (!fast) return app;
  return (req, res) => {
    if (!fast(req, res)) app(req, res);
  };
}

/**
 * The gateway's HTTP surface over a {@link GatewayCore}: routes only parse,
 * authenticate, call the core and serialise. Status codes come from the core's
 * error table.
 */
export function createApp(core: GatewayCore, options: AppOptions = {}): express.Express {
  const log = options.log ?? legacySink(core.logger, 'error');
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', core.config.trustProxy);
  app.set('json replacer', (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  // API answers are not cached: no SHA-1 of every body (static files keep theirs).
  app.set('etag', false);
  if (options.fastCallRoute !== false) {
    const fast = callRoute(core, app.get('trust proxy fn') as (addr: string, i: number) => boolean, log);
    callRoutes.set(app, fast);
    // Through express too (an app mounted by someone else): the same handler, first.
    app.use((req, res, next) => {
      if (!fast(req, res)) next();
    });
  }
  // X-Request-Id on every answer, one access-log line and the HTTP metrics per request.
  app.use(requestContext(core));

  app.use((_req, res, next) => {
    setSecurityHeaders(res);
    next();
  });

  const json = jsonBody({ limit: API_BODY_LIMIT, strict: false });
  const form = formBody({ limit: '64kb' });
  const body = [json, form];

  const secure = (req: Request) => core.config.secureCookies ?? req.secure;
  const cookieBase = (req: Request) => ({ httpOnly: true, sameSite: 'lax' as const, secure: secure(req), path: '/' });

  function setSession(req: Request, res: Response, session: { token: string; csrfToken: string; expiresAt: Date }) {
    res.cookie(SESSION_COOKIE, session.token, { ...cookieBase(req), expires: session.expiresAt });
    // Readable by the dashboard's script, which echoes it in X-CSRF-Token.
    res.cookie(CSRF_COOKIE, session.csrfToken, { ...cookieBase(req), httpOnly: false, expires: session.expiresAt });
  }

  const browser = browserPolicy(core.config);
  const safeRedirect = browser.safeRedirect;

  const isForm = (req: Request) => (req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');

  /** A cookie route: the Host must be ours and the Origin ours (or absent: not a browser). */
  const checkBrowser = (req: Request) => browser.checkBrowser(req);

  // ---- accounts -----------------------------------------------------------
  app.post(
    '/auth/signup',
    ...body,
    route(async (req, res) => {
      checkBrowser(req);
      await enforceRateLimit(core.rateLimits, core.config.rateLimits.auth, req.ip ?? 'unknown');
      const { user, session } = await core.accounts.signup(req.body);
      setSession(req, res, session);
      if (isForm(req)) return res.redirect(303, safeRedirect(req.body?.next));
      res.status(201).json({ ...(await core.account.me(user)), csrf_token: session.csrfToken });
    }),
  );

  app.post(
    '/auth/login',
    ...body,
    route(async (req, res) => {
      checkBrowser(req);
      await enforceRateLimit(core.rateLimits, core.config.rateLimits.auth, req.ip ?? 'unknown');
      const { user, session } = await core.accounts.login(req.body);
      setSession(req, res, session);
      if (isForm(req)) return res.redirect(303, safeRedirect(req.body?.next));
      res.json({ ...(await core.account.me(user)), csrf_token: session.csrfToken });
    }),
  );

  app.post(
    '/auth/logout',
    ...body,
    route(async (req, res) => {
      checkBrowser(req);
      const token = readCookies(req.headers.cookie)[SESSION_COOKIE];
      if (token) {
        const principal = await core.accounts.fromSession(token);
        if (principal) browser.checkCsrf(req, principal);
        await core.accounts.logout(token);
      }
      res.clearCookie(SESSION_COOKIE, cookieBase(req));
      res.clearCookie(CSRF_COOKIE, { ...cookieBase(req), httpOnly: false });
      if (isForm(req)) return res.redirect(303, '/');
      res.json({ ok: true });
    }),
  );

  // ---- credentials --------------------------------------------------------
  async function authenticate(req: Request): Promise<Principal> {
    const bearer = bearerToken(req);
    if (bearer !== undefined) return principalForBearer(core, bearer);
    const token = readCookies(req.headers.cookie)[SESSION_COOKIE];
    if (token) browser.checkHost(req);
    const principal = token ? await core.accounts.fromSession(token) : undefined;
    if (!principal) {
      await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, req.ip ?? 'unknown');
      throw new GatewayError('UNAUTHENTICATED', token ? 'session expired' : 'authentication required', undefined, { 'WWW-Authenticate': 'Bearer' });
    }
    if (UNSAFE.has(req.method)) {
      browser.checkOrigin(req);
      browser.checkCsrf(req, principal);
    }
    return principal;
  }

  const v1 = express.Router();
  v1.use((req: Request, _res: Response, next: NextFunction) => {
    authenticate(req)
      .then(async (principal) => {
        await admit(core, principal, req.method, req.path);
        principals.set(req, principal);
        notePrincipal(req, principal);
        next();
      })
      .catch(next);
  });
  // Bodies are parsed only for authenticated requests.
  v1.use(json, form);
  const who = (req: Request): Principal => {
    const p = principals.get(req);
    if (!p) throw new GatewayError('UNAUTHENTICATED', 'authentication required');
    return p;
  };

  // The hot path first.
  v1.post(
    '/call',
    route(async (req, res) => {
      const result = await core.calls.call(who(req), req.body, { idempotencyKey: idempotencyKey(req), maxCost: stringHeader(req, 'farebox-max-cost'), requestId: requestIdOf(req) });
      res.status(result.status).type('application/json').send(result.json);
    }),
  );
  // Every other operation of the contract's table (@farebox/contract), with its handler in gateway-core/src/api.
  mountContractRoutes({ app, v1, core, who });

  // Open endpoints.
  mountOperations(app, core);
  // The OpenAPI 3.1 document of this API (generated from @farebox/contract's table), naming this gateway as its server.
  let openApi: Record<string, unknown> | undefined;
  app.get('/openapi.json', (_req, res) => {
    openApi ??= openApiDocument({ serverUrl: core.config.publicOrigin });
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.json(openApi);
  });
  app.use('/v1', v1);
  app.use('/v1', (_req, _res, next) => next(new GatewayError('NOT_FOUND', 'not found')));
  options.mount?.(app);
  app.use(oauthRoutes(core, { sessionCookie: SESSION_COOKIE, log }), mcpRoutes(core, { log }));
  app.use(errorHandler(log));
  return app;
}

