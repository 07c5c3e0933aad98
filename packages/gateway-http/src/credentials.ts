import { enforceRateLimit, GatewayError, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { bearerToken, type BrowserPolicy } from './browser-policy.js';
import { readCookies, type HttpRequest } from './http.js';

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The principal of a bearer token (API key or OAuth access token), or 401 `invalid credential`. */
export async function principalForBearer(core: GatewayCore, token: string | null): Promise<Principal> {
  const principal = token ? await core.authenticateBearer(token) : undefined;
  if (!principal) throw new GatewayError('UNAUTHENTICATED', 'invalid credential', undefined, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  return principal;
}

/**
 * Who makes a `/v1` request (the handler's one reading): its bearer credential when it sends `Authorization`; else its
 * session cookie, whose Host must be ours, and for a write its Origin ours
 * (or absent) and the session's CSRF token sent; with neither, 401 once the
 * anonymous rate limit (by the client's address, `ip`) has counted it.
 */
export function requestAuthenticator(core: GatewayCore, browser: BrowserPolicy, sessionCookie: string) {
  return async function authenticate(req: Pick<HttpRequest, 'headers' | 'method'> & { parsed?: unknown }, ip: () => string | undefined): Promise<Principal> {
    const bearer = bearerToken(req);
    if (bearer !== undefined) return principalForBearer(core, bearer);
    const token = readCookies(req.headers.cookie)[sessionCookie];
    if (token) browser.checkHost(req);
    const principal = token ? await core.accounts.fromSession(token) : undefined;
    if (!principal) {
      await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, ip() ?? 'unknown');
      throw new GatewayError('UNAUTHENTICATED', token ? 'session expired' : 'authentication required', undefined, { 'WWW-Authenticate': 'Bearer' });
    }
    if (UNSAFE.has(req.method)) {
      browser.checkOrigin(req);
      browser.checkCsrf(req, principal);
    }
    return principal;
  };
}

/**
 * What every authenticated `/v1` request passes once its principal is known:
 * the account's rate limit, the OAuth client's, then whether the credential
 * reaches the operation (the OAuth scope, the API key's kind) (`path` inside `/v1`, as `/call`).
 */
export async function admit(core: GatewayCore, principal: Principal, method: string, path: string): Promise<void> {
  await enforceRateLimit(core.rateLimits, core.config.rateLimits.account, principal.user.id);
  if (principal.clientId) await enforceRateLimit(core.rateLimits, core.config.rateLimits.oauthClient, principal.clientId);
  core.checkAccess(principal, method, path);
}
