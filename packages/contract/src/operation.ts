import type { z } from 'zod';

/** What an OAuth connection may do; shown on the consent screen. */
export const OAUTH_SCOPES = {
  'agents:read': 'Search the catalog of paid services',
  'agents:call': 'Call services, paid from your credits (within the daily limit you set)',
  'account:read': 'See your balance and your recent transactions',
} as const;

export type OAuthScope = keyof typeof OAUTH_SCOPES;

/**
 * Who may call an operation.
 * - `none`: no credential (rate-limited per IP).
 * - `account`: a session cookie (with the CSRF token on writes) or an API key;
 *   an OAuth access token only when `oauthScope` is set, and only with that scope.
 * - `operator`: as `account` without OAuth, and the account must be an operator (403 otherwise, audited).
 */
export type Auth = { kind: 'none' } | { kind: 'account'; oauthScope?: OAuthScope; spendKey?: true } | { kind: 'operator' };

/** The `auth` of the table's operations: open, any credential of the account (an OAuth token with `oauthScope`), operators. */
export const account = (oauthScope?: OAuthScope): Auth => (oauthScope ? { kind: 'account', oauthScope } : { kind: 'account' });
/** What a spend key reaches too: calling, the catalog, its own balance, transactions and policy (`/v1/me`). */
export const spend = (oauthScope: OAuthScope): Auth => ({ kind: 'account', oauthScope, spendKey: true });
export const NONE: Auth = { kind: 'none' };
export const OPERATOR: Auth = { kind: 'operator' };

/**
 * The kinds of credential (docs/api.md, "Credentials and what each may do"):
 * - `session`: the dashboard's cookie (the signed-in owner);
 * - `manage_key`: an API key without a spending policy created as such: everything the owner may do;
 * - `spend_key`: an API key that may call, search and read its own balance, transactions and policy
 *   (every key with a spending policy is one, always);
 * - `oauth`: an OAuth access token: the operations whose `auth` names a scope, with that scope.
 */
export type CredentialKind = 'session' | 'manage_key' | 'spend_key' | 'oauth';
export const CREDENTIAL_KINDS: readonly CredentialKind[] = ['session', 'manage_key', 'spend_key', 'oauth'];

/**
 * Whether a credential of `kind` reaches `op` (the one rule: the gateway's
 * request path enforces it, the OpenAPI document shows it per operation as
 * `x-farebox-credentials`). Operator operations also need an operator account;
 * an OAuth token also needs the operation's scope.
 */
export function credentialReaches(op: Pick<Operation, 'auth'>, kind: CredentialKind): boolean {
  const { auth } = op;
  if (auth.kind === 'none') return true;
  if (kind === 'session' || kind === 'manage_key') return true;
  if (auth.kind === 'operator') return false;
  return kind === 'spend_key' ? auth.spendKey === true : auth.oauthScope !== undefined;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface OperationInput {
  params?: z.ZodObject;
  query?: z.ZodObject;
  body?: z.ZodType;
  headers?: z.ZodObject;
}

export interface Operation {
  /** Unique, stable: the OpenAPI `operationId`. */
  id: string;
  method: HttpMethod;
  /** Express-style path (`/v1/agents/:service`). */
  path: string;
  tag: 'accounts' | 'account' | 'catalog' | 'credentials' | 'webhooks' | 'publisher' | 'platform' | 'disputes' | 'operator';
  summary: string;
  auth: Auth;
  input: OperationInput;
  /** The success answer. */
  status: 200 | 201;
  output: z.ZodType;
  /** Other successful answers (an existing dispute is 200, a new one 201). */
  alsoStatus?: { status: 200 | 201; description: string };
  /** HTML form posts are accepted too (answered with a 303 redirect). */
  form?: boolean;
  /** Without a credential, rate-limited per client IP (the anonymous limit). */
  ipRateLimited?: boolean;
  /** Error answers: status -> when. Every one is `{ error }` unless `errorBody` says otherwise. */
  errors: Partial<Record<400 | 401 | 402 | 403 | 404 | 409 | 413 | 415 | 429 | 500 | 502 | 503, string>>;
  errorBody?: z.ZodType;
}
