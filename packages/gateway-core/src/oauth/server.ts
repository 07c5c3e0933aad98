import { GatewayError } from '../errors.js';
import { createAuthorization } from './authorization.js';
import { createClientMetadataDocuments } from './client-metadata.js';
import { createConnectionPolicies } from './connection-policies.js';
import { createClientRegistry } from './registration.js';
import { OAUTH_SCOPES, SUPPORTED_SCOPES } from './scopes.js';
import { createOAuthStore } from './store.js';
import { createTokenEndpoint } from './token.js';
import { DAY_MS, type CreateOAuthOptions, type OAuthServer } from './types.js';

export { oauthError, oauthErrorBody, utcDay } from './types.js';
export type { ClientMetadataOptions } from './client-metadata.js';
export type {
  AuthorizationCheck,
  AuthorizationRequest,
  AuthorizationServerMetadata,
  ClientRegistration,
  ConnectionView,
  CreateOAuthOptions,
  OAuthClient,
  OAuthConnections,
  OAuthErrorCode,
  OAuthOptions,
  OAuthServer,
  ProtectedResourceMetadata,
  TokenResponse,
} from './types.js';
import { systemClock } from '../clock.js';

/**
 * The OAuth 2.1 authorization server over the gateway database, composed of
 * its parts: client registration (registration.ts), authorization and consent
 * (authorization.ts), the token endpoint (token.ts) and their queries
 * (store.ts).
 */
export function createOAuth(options: CreateOAuthOptions): OAuthServer {
  const issuer = options.baseUrl.replace(/\/+$/, '');
  const resource = `${issuer}/mcp`;
  const now = options.now ?? systemClock;
  const allowedOrigins = new Set([new URL(issuer).origin, ...(options.allowedOrigins ?? [])]);

  const store = createOAuthStore(options.db);
  const policies = createConnectionPolicies({ db: options.db, now, ...(options.budgets ? { budgets: options.budgets } : {}) });
  const clients = createClientRegistry(store, now);
  const documents = createClientMetadataDocuments({
    store,
    policy: options.policy,
    now,
    ...(options.clientMetadataDocuments ? { options: options.clientMetadataDocuments } : {}),
  });
  const authorization = createAuthorization({ store, clients, documents, issuer, resource, codeTtlMs: options.codeTtlMs ?? 120_000, now });
  const tokens = createTokenEndpoint({
    store,
    clients,
    accessTtlMs: options.accessTokenTtlMs ?? 30 * DAY_MS,
    refreshTtlMs: options.refreshTokenTtlMs ?? 90 * DAY_MS,
    refreshGraceMs: options.refreshGraceMs ?? 30_000,
    now,
  });

  return {
    issuer,
    resource,
    resourceMetadataUrl: `${issuer}/.well-known/oauth-protected-resource/mcp`,
    scopes: OAUTH_SCOPES,
    metadata() {
      return {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        registration_endpoint: `${issuer}/register`,
        revocation_endpoint: `${issuer}/revoke`,
        scopes_supported: SUPPORTED_SCOPES,
        response_types_supported: ['code'],
        response_modes_supported: ['query'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
        revocation_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
        authorization_response_iss_parameter_supported: true,
        // Client ID Metadata Documents (the MCP spec's preferred client identification); RFC 7591 registration stays (deprecated by MCP).
        client_id_metadata_document_supported: true,
      };
    },
    resourceMetadata() {
      return { resource, authorization_servers: [issuer], scopes_supported: SUPPORTED_SCOPES, bearer_methods_supported: ['header'], resource_name: 'Farebox' };
    },
    originAllowed(origin) {
      return origin === undefined || allowedOrigins.has(origin);
    },
    rateLimits: {
      register: { name: 'oauth-register-ip', limit: options.registerPerMinute ?? 20, windowMs: 60_000 },
      token: { name: 'oauth-token-ip', limit: options.tokenPerMinute ?? 120, windowMs: 60_000 },
    },
    register: (input) => clients.register(input),
    checkAuthorization: (input) => authorization.check(input),
    existingConnection: (userId, clientId) => store.ownedConnection(userId, clientId),
    approve: (user, request, fields) => authorization.approve(user, request, fields),
    deny: (request) => authorization.deny(request),
    token: (body, auth) => tokens.token(body, auth),
    revoke: (body, auth) => tokens.revoke(body, auth),
    authenticate: (token, audience) => tokens.authenticate(token, audience),
    connections: {
      list: (userId) => policies.list(userId),
      update: (userId, id, input) => policies.update(userId, id, input),
      async revoke(userId, id) {
        if (!(await store.revokeConnection(userId, id, new Date(now())))) throw new GatewayError('NOT_FOUND', 'connection not found');
        return { id, revoked: true };
      },
    },
  };
}
