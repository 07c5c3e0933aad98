import { enforceRateLimit, GatewayError, type GatewayCore, type Principal } from '@farebox/gateway-core';

/** The principal of a bearer token (API key or OAuth access token), or 401 `invalid credential`. */
export async function principalForBearer(core: GatewayCore, token: string | null): Promise<Principal> {
  const principal = token ? await core.authenticateBearer(token) : undefined;
  if (!principal) throw new GatewayError('UNAUTHENTICATED', 'invalid credential', undefined, { 'WWW-Authenticate': 'Bearer error="invalid_token"' });
  return principal;
}

/**
 * What every authenticated `/v1` request passes once its principal is known:
 * the account's rate limit, the OAuth client's, then the OAuth scope of the
 * operation (`path` inside `/v1`, as `/call`).
 */
export async function admit(core: GatewayCore, principal: Principal, method: string, path: string): Promise<void> {
  await enforceRateLimit(core.rateLimits, core.config.rateLimits.account, principal.user.id);
  if (principal.clientId) await enforceRateLimit(core.rateLimits, core.config.rateLimits.oauthClient, principal.clientId);
  core.checkOAuthAccess(principal, method, path);
}
