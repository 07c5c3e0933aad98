import type { User } from '../auth/accounts.js';
import { hashToken, randomToken } from '../auth/tokens.js';
import { isMetadataDocumentUrl, type ClientMetadataDocuments } from './client-metadata.js';
import { consentPolicy } from './connection-policies.js';
import { matchRedirectUri } from './redirects.js';
import type { ClientRegistry } from './registration.js';
import { parseScopes, SUPPORTED_SCOPES } from './scopes.js';
import type { OAuthStore } from './store.js';
import { CODE_PREFIX, param, type AuthorizationCheck, type AuthorizationRequest, type OAuthClient, type OAuthErrorCode } from './types.js';

/** `/authorize`: the request's checks, the user's consent (a connection and a single-use code) or refusal. */
export interface Authorization {
  check(input: Record<string, unknown>): Promise<AuthorizationCheck>;
  approve(user: User, request: AuthorizationRequest, policyFields: Record<string, unknown>): Promise<string>;
  deny(request: AuthorizationRequest): string;
}

export function createAuthorization(o: {
  store: OAuthStore;
  clients: ClientRegistry;
  documents: ClientMetadataDocuments;
  issuer: string;
  resource: string;
  codeTtlMs: number;
  now: () => number;
}): Authorization {
  const { store, now } = o;

  function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
    const u = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
    // RFC 9207: the issuer in every authorization response, success or error.
    u.searchParams.set('iss', o.issuer);
    return u.toString();
  }

  return {
    async check(input) {
      let clientId: string | undefined;
      let redirectUri: string | undefined;
      try {
        clientId = param(input, 'client_id');
        redirectUri = param(input, 'redirect_uri');
      } catch (err) {
        return { kind: 'error_page', message: (err as Error).message };
      }
      if (!clientId) return { kind: 'error_page', message: 'client_id required' };
      let client: OAuthClient | undefined;
      if (isMetadataDocumentUrl(clientId)) {
        // A Client ID Metadata Document: the client is what the document at that URL says now.
        const found = await o.documents.client(clientId);
        if (!found.ok) return { kind: 'error_page', message: found.message };
        client = found.client;
      } else {
        client = await o.clients.byId(clientId);
      }
      if (!client) return { kind: 'error_page', message: 'unknown client: register it first (POST /register) or use a client metadata document URL' };
      if (!redirectUri) return { kind: 'error_page', message: 'redirect_uri required' };
      if (!matchRedirectUri(client.redirectUris, redirectUri)) return { kind: 'error_page', message: 'redirect_uri is not registered for this client' };
      let state: string | undefined;
      try {
        state = param(input, 'state');
      } catch {
        return { kind: 'redirect', location: redirectWith(redirectUri, { error: 'invalid_request', error_description: 'state must be given once' }) };
      }
      const fail = (error: OAuthErrorCode, description: string): AuthorizationCheck => ({
        kind: 'redirect',
        location: redirectWith(redirectUri, { error, error_description: description, state }),
      });
      try {
        const responseType = param(input, 'response_type');
        if (responseType !== 'code') return fail('unsupported_response_type', 'response_type must be code');
        const challenge = param(input, 'code_challenge');
        const method = param(input, 'code_challenge_method');
        if (!challenge) return fail('invalid_request', 'code_challenge required (PKCE with S256)');
        if (method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256');
        if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return fail('invalid_request', 'code_challenge must be the base64url SHA-256 of the verifier');
        const scopes = parseScopes(param(input, 'scope'));
        if (!scopes) return fail('invalid_scope', `unknown scope; supported: ${SUPPORTED_SCOPES.join(' ')}`);
        const target = param(input, 'resource');
        if (target !== undefined && target !== o.resource) return fail('invalid_target', `this server issues tokens for ${o.resource} only`);
        if (state !== undefined && state.length > 2048) return fail('invalid_request', 'state too long');
        return { kind: 'ok', request: { client, redirectUri, scopes, state, codeChallenge: challenge, resource: o.resource } };
      } catch (err) {
        return fail('invalid_request', (err as Error).message);
      }
    },

    async approve(user, request, policyFields) {
      // Checked before anything is granted (the messages of PATCH /v1/oauth/connections/:id).
      const policy = consentPolicy(policyFields);
      const scopes = request.scopes.join(' ');
      const connectionId = await store.upsertConnection({
        id: `conn_${randomToken(12)}`,
        userId: user.id,
        clientId: request.client.clientId,
        scopes,
        policy,
        createdAt: new Date(now()),
      });
      const code = `${CODE_PREFIX}${randomToken()}`;
      await store.insertCode({
        codeHash: hashToken(code),
        familyId: `fam_${randomToken(12)}`,
        connectionId,
        clientId: request.client.clientId,
        redirectUri: request.redirectUri,
        codeChallenge: request.codeChallenge,
        scopes,
        resource: request.resource,
        expiresAt: new Date(now() + o.codeTtlMs),
        createdAt: new Date(now()),
      });
      return redirectWith(request.redirectUri, { code, state: request.state });
    },

    deny(request) {
      return redirectWith(request.redirectUri, { error: 'access_denied', error_description: 'the user denied access', state: request.state });
    },
  };
}
