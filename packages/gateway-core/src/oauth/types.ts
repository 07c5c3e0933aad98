import type { Database } from '@farebox/ledger';
import type { Principal, User } from '../auth/accounts.js';
import type { SpendingPolicy } from '../auth/policy.js';
import { GatewayError } from '../errors.js';
import type { EndpointPolicy } from '../security/endpoint-guard.js';
import type { RateLimitRule } from '../security/rate-limit.js';
import type { ClientMetadataOptions } from './client-metadata.js';
import type { OAuthScope } from './scopes.js';

/** Lifetimes of the authorization server (tests shorten them); its clock is the gateway's (`CreateGatewayOptions.now`). */
export interface OAuthOptions {
  /** Access token lifetime (default 30 days, the spec's value). */
  accessTokenTtlMs?: number;
  /** Refresh token lifetime; each rotation starts a new one (default 90 days). */
  refreshTokenTtlMs?: number;
  /** Authorization code lifetime (default 2 minutes). */
  codeTtlMs?: number;
  /** How long a client retrying the same refresh gets the same new pair back (default 30 s). */
  refreshGraceMs?: number;
  /** Origins allowed to call /mcp from a browser besides the gateway's own (`FAREBOX_MCP_ALLOWED_ORIGINS`, comma-separated). */
  allowedOrigins?: string[];
  /** Per-IP limits per minute: /register (default 20) and /token (default 120). */
  registerPerMinute?: number;
  tokenPerMinute?: number;
  /** Fetching Client ID Metadata Documents: size and time limits, cache bounds, extra trusted CAs (tests). */
  clientMetadataDocuments?: ClientMetadataOptions;
}

export interface CreateOAuthOptions extends OAuthOptions {
  db: Database;
  /** Where the gateway may connect (metadata documents go through the same guard as service calls). */
  policy: EndpointPolicy;
  /** The gateway's public address (the issuer). */
  baseUrl: string;
  /** The gateway's clock, in epoch milliseconds (default `Date.now`): codes', tokens' and connections' times, spending periods. */
  now?: () => number;
  /** What connections spent per period (the ledger's budgets), for the connections' list. */
  budgets?: (of: Array<{ credential: string; period: string }>) => Promise<Map<string, import('@farebox/ledger').BudgetUse>>;
}

export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'access_denied'
  | 'temporarily_unavailable';

/** An OAuth protocol error: a `GatewayError` whose data carries the RFC 6749 error code. */
export function oauthError(code: OAuthErrorCode, description: string, headers?: Record<string, string>): GatewayError {
  return new GatewayError(code === 'invalid_client' ? 'UNAUTHENTICATED' : 'BAD_REQUEST', description, { oauthError: code }, headers);
}

/** The RFC 6749 body `{ error, error_description }` for any error an OAuth endpoint throws. */
export function oauthErrorBody(err: GatewayError): { error: string; error_description: string } {
  const code =
    typeof err.data?.oauthError === 'string'
      ? err.data.oauthError
      : err.code === 'RATE_LIMITED'
        ? 'temporarily_unavailable'
        : err.code === 'BAD_REQUEST'
          ? 'invalid_request'
          : 'server_error';
  return { error: code, error_description: err.message };
}

export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

export interface OAuthClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  clientUri: string | undefined;
  /** Set for a client identified by its metadata document (its `client_id` is that URL): the URL's host, which the consent page shows. */
  metadataDocumentHost?: string;
}

/** A validated authorization request, as the consent screen shows and posts it back. */
export interface AuthorizationRequest {
  client: OAuthClient;
  redirectUri: string;
  scopes: OAuthScope[];
  state: string | undefined;
  codeChallenge: string;
  resource: string;
}

/**
 * The outcome of checking /authorize parameters: show the consent screen,
 * show an error page (unknown client or redirect URI: never redirect), or
 * redirect the error to the client.
 */
export type AuthorizationCheck =
  | { kind: 'ok'; request: AuthorizationRequest }
  | { kind: 'error_page'; message: string }
  | { kind: 'redirect'; location: string };

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** The RFC 7591 registration response: the client's metadata and, for a confidential client, its secret. */
export interface ClientRegistration {
  client_id: string;
  client_secret?: string;
  client_secret_expires_at?: number;
  client_id_issued_at: number;
  redirect_uris: string[];
  client_name: string;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: string[];
  response_types: string[];
  scope?: string;
  client_uri?: string;
  logo_uri?: string;
  tos_uri?: string;
  policy_uri?: string;
  software_id?: string;
  software_version?: string;
  application_type?: 'native' | 'web';
}

/** An app the user authorized (`GET /v1/oauth/connections`), with today's (UTC) spending. */
export interface ConnectionView {
  id: string;
  client_id: string;
  client_name: string;
  scopes: string[];
  daily_limit_usd: number | null;
  daily_limit_base_units: number | null;
  spent_today_usd: number;
  spent_today_base_units: number;
  created_at: string;
  last_used_at: string | null;
  /** The spending policy and its budget this period (auth/policy.ts). */
  limit_usd: number | null;
  limit_period: 'day' | 'week' | 'month' | 'total' | null;
  allowed_services: string[] | null;
  max_call_usd: number | null;
  spent_usd: number | null;
  remaining_usd: number | null;
  resets_at: string | null;
}

/** RFC 8414 authorization server metadata (`/.well-known/oauth-authorization-server`). */
export interface AuthorizationServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  registration_endpoint: string;
  revocation_endpoint: string;
  scopes_supported: OAuthScope[];
  response_types_supported: string[];
  response_modes_supported: string[];
  grant_types_supported: string[];
  code_challenge_methods_supported: string[];
  token_endpoint_auth_methods_supported: TokenEndpointAuthMethod[];
  revocation_endpoint_auth_methods_supported: TokenEndpointAuthMethod[];
  authorization_response_iss_parameter_supported: boolean;
  client_id_metadata_document_supported: boolean;
}

/** RFC 9728 protected resource metadata (`/.well-known/oauth-protected-resource/mcp`). */
export interface ProtectedResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: OAuthScope[];
  bearer_methods_supported: string[];
  resource_name: string;
}

/** The user's authorized apps. */
export interface OAuthConnections {
  list(userId: string): Promise<ConnectionView[]>;
  /** Changes the connection's spending policy (the contract's SpendingPolicyBody). */
  update(userId: string, id: string, input: unknown): Promise<ConnectionView>;
  /** Disconnects the app and revokes every token it holds. */
  revoke(userId: string, id: string): Promise<{ id: string; revoked: true }>;
}

/**
 * The OAuth 2.1 authorization server: metadata (RFC 8414, RFC 9728), dynamic
 * client registration (RFC 7591), authorization codes with PKCE S256,
 * rotating refresh tokens with reuse detection, revocation (RFC 7009),
 * audience-bound opaque access tokens stored hashed, and the user's
 * connections. Framework-agnostic: the HTTP host renders pages and maps errors.
 */
export interface OAuthServer {
  readonly issuer: string;
  /** The protected resource every access token is bound to: `{base_url}/mcp`. */
  readonly resource: string;
  readonly resourceMetadataUrl: string;
  /** What each scope lets an app do, as the consent screen says it. */
  readonly scopes: Readonly<Record<OAuthScope, string>>;
  /** RFC 8414 authorization server metadata. */
  metadata(): AuthorizationServerMetadata;
  /** RFC 9728 protected resource metadata of `/mcp`. */
  resourceMetadata(): ProtectedResourceMetadata;
  /** True when a browser page at `origin` may call /mcp (no Origin header: not a browser, allowed). */
  originAllowed(origin: string | undefined): boolean;
  readonly rateLimits: { register: RateLimitRule; token: RateLimitRule };
  /** RFC 7591 dynamic client registration. */
  register(input: unknown): Promise<ClientRegistration>;
  /** Validates /authorize parameters (query or the consent form's fields). */
  checkAuthorization(input: Record<string, unknown>): Promise<AuthorizationCheck>;
  /** The spending policy a returning user set for this client (undefined: none), to prefill the consent screen. */
  existingConnection(userId: string, clientId: string): Promise<{ policy: SpendingPolicy | undefined } | undefined>;
  /**
   * The user consented: creates (or updates) the connection with the spending policy of the consent form's fields
   * (`limit_usd`, `limit_period`, `allowed_services`, `max_call_usd`; a `BAD_REQUEST` with PATCH's message, nothing
   * granted, for bad input) and returns the redirect carrying a single-use code.
   */
  approve(user: User, request: AuthorizationRequest, policyFields: Record<string, unknown>): Promise<string>;
  /** The user refused: the error redirect. */
  deny(request: AuthorizationRequest): string;
  /** `POST /token`: authorization_code and refresh_token grants. */
  token(body: Record<string, unknown>, authorization: string | undefined): Promise<TokenResponse>;
  /** `POST /revoke` (RFC 7009): revoking a refresh token revokes every token of its grant. Unknown tokens are not an error. */
  revoke(body: Record<string, unknown>, authorization: string | undefined): Promise<void>;
  /** The principal for a live access token; with `audience`, only a token bound to that resource (RFC 8707). */
  authenticate(token: string, audience?: string): Promise<Principal | undefined>;
  readonly connections: OAuthConnections;
}

/** A single string parameter; a repeated one (an array) is refused, as RFC 6749 3.1 requires. */
export function param(input: Record<string, unknown>, name: string): string | undefined {
  const v = input[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw oauthError('invalid_request', `${name} must be given once`);
  return v;
}

/** The UTC day (`YYYY-MM-DD`) of an instant. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export const ACCESS_PREFIX = 'fbo_at_';
export const REFRESH_PREFIX = 'fbo_rt_';
export const CODE_PREFIX = 'fbo_ac_';
export const DAY_MS = 24 * 3600 * 1000;
