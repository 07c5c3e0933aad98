import type { Principal } from '../auth/accounts.js';
import { GatewayError } from '../errors.js';

/** What an OAuth connection may do; shown on the consent screen. */
export const OAUTH_SCOPES = {
  'agents:read': 'Search the catalog of paid services',
  'agents:call': 'Call services, paid from your credits (within the daily limit you set)',
  'account:read': 'See your balance and your recent transactions',
} as const;

export type OAuthScope = keyof typeof OAUTH_SCOPES;

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

/** Which /v1 requests an OAuth access token may make, and the scope each needs. Everything else is refused. */
const V1_ACCESS: Array<{ method: string; path: RegExp; scope: OAuthScope }> = [
  { method: 'GET', path: /^\/agents\/?$/, scope: 'agents:read' },
  { method: 'GET', path: /^\/agents\/[^/]+\/manifest\/?$/, scope: 'agents:read' },
  { method: 'POST', path: /^\/call\/?$/, scope: 'agents:call' },
  { method: 'GET', path: /^\/(me|balance|wallet|transactions)\/?$/, scope: 'account:read' },
];

/** Throws 403 unless an OAuth principal's scopes allow this /v1 request (`path` relative to /v1). */
export function checkOAuthAccess(principal: Principal, method: string, path: string): void {
  if (principal.via !== 'oauth') return;
  const rule = V1_ACCESS.find((r) => r.method === method && r.path.test(path));
  if (!rule) throw new GatewayError('FORBIDDEN', 'not available with an OAuth access token (use the dashboard or an API key)');
  requireScope(principal, rule.scope);
}

/** Throws 403 when an OAuth principal lacks `scope`; other credentials hold every scope. */
export function requireScope(principal: Principal, scope: OAuthScope): void {
  if (principal.via !== 'oauth') return;
  if (!principal.scopes?.includes(scope)) throw new GatewayError('FORBIDDEN', `this connection was not granted the ${scope} scope`, { scope });
}
