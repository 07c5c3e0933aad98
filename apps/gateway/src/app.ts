import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { GatewayError, enforceRateLimit, legacySink, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { API_BODY_LIMIT, formBody, jsonBody } from './body.js';
import { callRoute } from './call-route.js';
import { browserPolicy } from './browser-policy.js';
import { errorHandler, readCookies, route, setSecurityHeaders } from './http.js';
import { admit, requestAuthenticator } from './credentials.js';
import { mcpRoutes } from './mcp-routes.js';
import { oauthRoutes } from './oauth-routes.js';
import { approvalRoutes } from './approval-routes.js';
import { bazaarRoutes } from './bazaar-routes.js';
import { mountContractRoutes } from './contract-routes.js';
import { mountOperations, notePrincipal, requestContext } from './observability.js';
import { openApiDocument } from './openapi.js';
import { x402Routes } from './x402-routes.js';

export const SESSION_COOKIE = 'farebox_session';
export const CSRF_COOKIE = 'farebox_csrf';

const principals = new WeakMap<Request, Principal>();

export interface AppOptions {
  /** Extra routers mounted before the API (the embedded devnet, the dashboard, OAuth, MCP). */
  mount?: (app: express.Express) => void;
  log?: (message: string, err?: unknown) => void;
}

const callRoutes = new WeakMap<express.Express, (req: IncomingMessage, res: ServerResponse) => boolean>();

/**
 * The gateway's request handler for `http.createServer`: `POST /v1/call`
 * goes straight to its route on node:http (`call-route.ts`), everything else
 * to `app`.
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
  const browser = browserPolicy(core.config);
  const authenticate = requestAuthenticator(core, browser, SESSION_COOKIE);
  // POST /v1/call has one route, on node:http (call-route.ts): express has none.
  const calls = callRoute(core, { authenticate, trustProxy: app.get('trust proxy fn') as (addr: string, i: number) => boolean, log });
  callRoutes.set(app, calls);
  // An app served without requestHandler (mounted by someone else) hands it over first.
  app.use((req, res, next) => {
    if (!calls(req, res)) next();
  });
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
  const v1 = express.Router();
  v1.use((req: Request, _res: Response, next: NextFunction) => {
    authenticate(req, () => req.ip)
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

  // Every other operation of the contract's table (@farebox/contract), with its handler in gateway-core/src/api.
  mountContractRoutes({ app, v1, core, who });

  // Open endpoints.
  mountOperations(app, core);
  // The platform's x402 facilitator: /x402/supported, /x402/verify, /x402/settle (x402-routes.ts).
  app.use(x402Routes(core));
  // The x402 bazaar catalog, also under the facilitator's base /x402.
  app.use(bazaarRoutes(core));
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
  app.use(oauthRoutes(core, { sessionCookie: SESSION_COOKIE, log }), approvalRoutes(core, { sessionCookie: SESSION_COOKIE }), mcpRoutes(core, { log }));
  app.use(errorHandler(log));
  return app;
}
