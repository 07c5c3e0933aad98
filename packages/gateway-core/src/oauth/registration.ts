import { z } from 'zod';
import { hashToken, randomToken, safeEqual } from '../auth/tokens.js';
import { isMetadataDocumentUrl } from './client-metadata.js';
import { redirectUriProblem } from './redirects.js';
import { parseScopes, SUPPORTED_SCOPES } from './scopes.js';
import type { OAuthStore } from './store.js';
import { oauthError, param, type ClientRegistration, type OAuthClient, type TokenEndpointAuthMethod } from './types.js';

const httpsUrl = (what: string) =>
  z
    .string({ error: `${what} must be a string` })
    .max(2048, `${what} too long`)
    .refine((s) => {
      try {
        return new URL(s).protocol === 'https:';
      } catch {
        return false;
      }
    }, `${what} must be an https URL`);

const RegistrationSchema = z.object({
  redirect_uris: z
    .array(z.string({ error: 'redirect_uris must be strings' }).max(2048, 'redirect URI too long'), { error: 'redirect_uris required (an array of URLs)' })
    .min(1, 'redirect_uris required (an array of URLs)')
    .max(10, 'at most 10 redirect_uris'),
  client_name: z.string({ error: 'client_name must be a string' }).trim().max(100, 'client_name too long (max 100)').optional(),
  token_endpoint_auth_method: z
    .enum(['none', 'client_secret_basic', 'client_secret_post'], {
      error: 'token_endpoint_auth_method must be none, client_secret_basic or client_secret_post',
    })
    .optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  scope: z.string({ error: 'scope must be a string' }).max(512).optional(),
  client_uri: httpsUrl('client_uri').optional(),
  logo_uri: httpsUrl('logo_uri').optional(),
  tos_uri: httpsUrl('tos_uri').optional(),
  policy_uri: httpsUrl('policy_uri').optional(),
  software_id: z.string().max(200).optional(),
  // OpenID Connect Dynamic Registration: what the client is (the MCP spec's DCR clients send it).
  application_type: z.enum(['native', 'web'], { error: 'application_type must be native or web' }).optional(),
  software_version: z.string().max(100).optional(),
});

/** Clients: RFC 7591 registration, lookup, and client authentication at /token and /revoke. */
export interface ClientRegistry {
  register(input: unknown): Promise<ClientRegistration>;
  /** A registered client (ids longer than 100 characters are never ours). */
  byId(clientId: string): Promise<OAuthClient | undefined>;
  /** Authenticates the client: none, client_secret_basic or client_secret_post, exactly as registered. */
  authenticate(body: Record<string, unknown>, authorization: string | undefined): Promise<OAuthClient>;
}

export function createClientRegistry(store: OAuthStore, now: () => number): ClientRegistry {
  // Registered ids are short; a metadata document's id is its https URL (stored once /authorize fetched it).
  const byId = (clientId: string) => (clientId.length > 100 && !isMetadataDocumentUrl(clientId) ? Promise.resolve(undefined) : store.clientById(clientId));
  return {
    byId,
    async register(input) {
      const parsed = RegistrationSchema.safeParse(input ?? {});
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        const onRedirects = issue?.path[0] === 'redirect_uris';
        throw oauthError(onRedirects ? 'invalid_redirect_uri' : 'invalid_client_metadata', issue?.message ?? 'invalid client metadata');
      }
      const m = parsed.data;
      for (const uri of m.redirect_uris) {
        const problem = redirectUriProblem(uri);
        if (problem) throw oauthError('invalid_redirect_uri', problem);
      }
      const grantTypes = m.grant_types ?? ['authorization_code', 'refresh_token'];
      const badGrant = grantTypes.find((g) => g !== 'authorization_code' && g !== 'refresh_token');
      if (badGrant) throw oauthError('invalid_client_metadata', `grant type ${badGrant} is not supported (authorization_code and refresh_token only)`);
      const badResponse = (m.response_types ?? ['code']).find((r) => r !== 'code');
      if (badResponse) throw oauthError('invalid_client_metadata', `response type ${badResponse} is not supported (code only)`);
      if (m.scope !== undefined && !parseScopes(m.scope))
        throw oauthError('invalid_client_metadata', `unknown scope; supported: ${SUPPORTED_SCOPES.join(' ')}`);
      const method: TokenEndpointAuthMethod = m.token_endpoint_auth_method ?? 'client_secret_basic';
      const clientId = `fbc_${randomToken(16)}`;
      const secret = method === 'none' ? undefined : `fbs_${randomToken()}`;
      const issuedAt = Math.floor(now() / 1000);
      const metadata = {
        redirect_uris: m.redirect_uris,
        client_name: m.client_name || 'Unnamed app',
        token_endpoint_auth_method: method,
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        ...(m.scope !== undefined ? { scope: parseScopes(m.scope)!.join(' ') } : {}),
        ...(m.client_uri ? { client_uri: m.client_uri } : {}),
        ...(m.logo_uri ? { logo_uri: m.logo_uri } : {}),
        ...(m.tos_uri ? { tos_uri: m.tos_uri } : {}),
        ...(m.policy_uri ? { policy_uri: m.policy_uri } : {}),
        ...(m.software_id ? { software_id: m.software_id } : {}),
        ...(m.software_version ? { software_version: m.software_version } : {}),
        ...(m.application_type ? { application_type: m.application_type } : {}),
      };
      await store.insertClient({
        clientId,
        secretHash: secret ? hashToken(secret) : null,
        method,
        clientName: metadata.client_name,
        redirectUris: m.redirect_uris,
        metadata,
        createdAt: new Date(now()),
      });
      return {
        client_id: clientId,
        ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        client_id_issued_at: issuedAt,
        ...metadata,
      };
    },
    async authenticate(body, authorization) {
      let clientId: string | undefined;
      let secret: string | undefined;
      let method: TokenEndpointAuthMethod;
      const basicChallenge = { 'WWW-Authenticate': 'Basic realm="farebox"' };
      const bodyId = param(body, 'client_id');
      const bodySecret = param(body, 'client_secret');
      if (authorization !== undefined) {
        const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
        const decoded = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : '';
        const colon = decoded.indexOf(':');
        if (colon < 0) throw oauthError('invalid_client', 'malformed Basic client credentials', basicChallenge);
        const form = (s: string) => {
          try {
            return decodeURIComponent(s.replace(/\+/g, ' '));
          } catch {
            return s;
          }
        };
        clientId = form(decoded.slice(0, colon));
        secret = form(decoded.slice(colon + 1));
        method = 'client_secret_basic';
        if (bodySecret !== undefined) throw oauthError('invalid_request', 'use one client authentication method, not two');
        if (bodyId !== undefined && bodyId !== clientId) throw oauthError('invalid_request', 'client_id does not match the Basic credentials');
      } else {
        clientId = bodyId;
        secret = bodySecret;
        method = bodySecret !== undefined ? 'client_secret_post' : 'none';
      }
      if (!clientId) throw oauthError('invalid_client', 'client_id required');
      const client = await byId(clientId);
      if (!client) throw oauthError('invalid_client', 'unknown client', method === 'client_secret_basic' ? basicChallenge : undefined);
      if (client.tokenEndpointAuthMethod !== method) {
        throw oauthError(
          'invalid_client',
          `this client was registered to authenticate with ${client.tokenEndpointAuthMethod}`,
          method === 'client_secret_basic' ? basicChallenge : undefined,
        );
      }
      if (method !== 'none' && (!client.secretHash || !safeEqual(hashToken(secret ?? ''), client.secretHash))) {
        throw oauthError('invalid_client', 'invalid client credentials', method === 'client_secret_basic' ? basicChallenge : undefined);
      }
      return client;
    },
  };
}
