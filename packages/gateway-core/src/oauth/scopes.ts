import { credentialReaches, findOperation, OAUTH_SCOPES, type CredentialKind, type OAuthScope } from '@farebox/contract';
import type { Principal } from '../auth/accounts.js';
import { GatewayError } from '../errors.js';

/** What an OAuth connection may do (shown on the consent screen): the contract's scopes. */
export { OAUTH_SCOPES };
export type { OAuthScope };

export const SUPPORTED_SCOPES = Object.keys(OAUTH_SCOPES) as OAuthScope[];

const isScope = (s: string): s is OAuthScope => Object.hasOwn(OAUTH_SCOPES, s);

/** Parses a space-separated scope string; every scope when it is absent. Returns undefined when a scope is unknown. */
export function parseScopes(value: string | undefined): OAuthScope[] | undefined {
  if (value === undefined || value.trim() === '') return [...SUPPORTED_SCOPES];
  const parts = [...new Set(value.trim().split(/ +/))];
  if (!parts.every(isScope)) return undefined;
  return SUPPORTED_SCOPES.filter((s) => parts.includes(s));
}

/**
 * The scopes a token may use now: those its connection grants (the source of
 * truth, read on every use), cut down to the token's own set when its client
 * narrowed it at a refresh (`own`; NULL follows the connection). In the order
 * of {@link SUPPORTED_SCOPES}; empty when nothing is left.
 */
export function tokenScopes(granted: string, own: string | null): OAuthScope[] {
  const grant = granted.split(' ');
  const asked = own === null ? undefined : own.split(' ');
  return SUPPORTED_SCOPES.filter((s) => grant.includes(s) && (asked === undefined || asked.includes(s)));
}

/**
 * What the principal's credential is (the contract's kinds): the session, a
 * manage or spend API key, an OAuth token.
 */
export function credentialKindOf(principal: Principal): CredentialKind {
  if (principal.via === 'api_key') return principal.keyKind === 'spend' ? 'spend_key' : 'manage_key';
  return principal.via;
}

/** What a spend key may do, in the words of its refusals. */
export const SPEND_KEY_REACH = 'call services, search the catalog and read its own balance, transactions and policy (GET /v1/me)';

/**
 * Throws 403 unless the principal's credential reaches this /v1 request
 * (`path` relative to /v1): the contract's one rule (`credentialReaches`).
 * An OAuth token may use exactly the operations whose auth names a scope,
 * with that scope; a spend key exactly those its table marks; a request the
 * table does not know is refused to both.
 */
export function checkAccess(principal: Principal, method: string, path: string): void {
  if (principal.via === 'session' || (principal.via === 'api_key' && principal.keyKind !== 'spend')) return;
  const op = findOperation(method, `/v1${path}`);
  if (principal.via === 'api_key') {
    if (op && credentialReaches(op, 'spend_key')) return;
    throw new GatewayError('FORBIDDEN', `this is a spend key: it may only ${SPEND_KEY_REACH}; use a manage key or the dashboard for this`, {
      code: 'CREDENTIAL_KIND',
    });
  }
  const scope = op?.auth.kind === 'account' ? op.auth.oauthScope : undefined;
  if (!scope) throw new GatewayError('FORBIDDEN', 'not available with an OAuth access token (use the dashboard or an API key)');
  requireScope(principal, scope);
}

/** Throws 403 when an OAuth principal lacks `scope`; other credentials hold every scope. */
export function requireScope(principal: Principal, scope: OAuthScope): void {
  if (principal.via !== 'oauth') return;
  if (!principal.scopes?.includes(scope)) throw new GatewayError('FORBIDDEN', `this connection was not granted the ${scope} scope`, { scope });
}
