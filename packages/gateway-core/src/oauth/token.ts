import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Principal } from '../auth/accounts.js';
import { policyFromRow, type SpendingPolicy } from '../auth/policy.js';
import { hashToken, randomToken, safeEqual } from '../auth/tokens.js';
import type { Db } from '../db.js';
import type { ClientRegistry } from './registration.js';
import { parseScopes, tokenScopes } from './scopes.js';
import type { AccessTokenRow, OAuthStore } from './store.js';
import { ACCESS_PREFIX, oauthError, param, REFRESH_PREFIX, type OAuthClient, type TokenResponse } from './types.js';

const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** Seals the pair a refresh token was rotated into, with a key only that refresh token gives. */
function seal(refreshToken: string, value: object): string {
  const key = createHash('sha256').update(`farebox-oauth-successor\u0000${refreshToken}`).digest();
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url');
}

function unseal<T>(refreshToken: string, sealed: string): T | undefined {
  try {
    const raw = Buffer.from(sealed, 'base64url');
    const key = createHash('sha256').update(`farebox-oauth-successor\u0000${refreshToken}`).digest();
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as T;
  } catch {
    return undefined;
  }
}

class RotationRace extends Error {}

/**
 * What a new pair is issued for. `scopes` is stored on the tokens: NULL makes
 * them follow the connection's scopes, a set is what the client narrowed them
 * to (still cut down by the connection). `answer` is the `scope` the response
 * states: what the tokens may use now.
 */
type Grant = { familyId: string; connectionId: string; clientId: string; scopes: string | null; answer: string; resource: string };
type Successor = { access: string; refresh: string };

/** Tokens: the two grants of `POST /token`, `POST /revoke`, and access-token authentication. */
export interface TokenEndpoint {
  token(body: Record<string, unknown>, authorization: string | undefined): Promise<TokenResponse>;
  revoke(body: Record<string, unknown>, authorization: string | undefined): Promise<void>;
  authenticate(token: string, audience?: string): Promise<Principal | undefined>;
}

export interface TokenEndpointOptions {
  store: OAuthStore;
  clients: ClientRegistry;
  accessTtlMs: number;
  refreshTtlMs: number;
  refreshGraceMs: number;
  now: () => number;
}

export function createTokenEndpoint(o: TokenEndpointOptions): TokenEndpoint {
  const { store, now } = o;
  const revokeFamily = (familyId: string) => store.revokeFamily(familyId, new Date(now()));

  async function issuePair(tx: Db, grant: Grant): Promise<TokenResponse> {
    const access = `${ACCESS_PREFIX}${randomToken()}`;
    const refresh = `${REFRESH_PREFIX}${randomToken()}`;
    const t = now();
    const base = {
      familyId: grant.familyId,
      connectionId: grant.connectionId,
      clientId: grant.clientId,
      scopes: grant.scopes,
      resource: grant.resource,
      createdAt: new Date(t),
    };
    await store.insertToken(tx, { ...base, tokenHash: hashToken(access), kind: 'access', expiresAt: new Date(t + o.accessTtlMs) });
    await store.insertToken(tx, { ...base, tokenHash: hashToken(refresh), kind: 'refresh', expiresAt: new Date(t + o.refreshTtlMs) });
    return { access_token: access, token_type: 'Bearer', expires_in: Math.floor(o.accessTtlMs / 1000), refresh_token: refresh, scope: grant.answer };
  }

  function checkResourceParam(body: Record<string, unknown>, granted: string) {
    const r = param(body, 'resource');
    if (r !== undefined && r !== granted) throw oauthError('invalid_target', `this grant is for the resource ${granted}`);
  }

  async function codeGrant(body: Record<string, unknown>, client: OAuthClient): Promise<TokenResponse> {
    const code = param(body, 'code');
    const redirectUri = param(body, 'redirect_uri');
    const verifier = param(body, 'code_verifier');
    if (!code) throw oauthError('invalid_request', 'code required');
    if (!verifier) throw oauthError('invalid_request', 'code_verifier required (PKCE)');
    if (!PKCE_VALUE.test(verifier)) throw oauthError('invalid_request', 'code_verifier must be 43 to 128 unreserved characters');
    if (!redirectUri) throw oauthError('invalid_request', 'redirect_uri required');
    const hash = hashToken(code);
    // Burn the code first: whatever follows, it is never accepted twice.
    const row = await store.burnCode(hash, new Date(now()));
    if (!row) {
      const family = await store.codeFamily(hash);
      if (family) {
        await revokeFamily(family);
        throw oauthError('invalid_grant', 'authorization code already used; the tokens issued for it are revoked');
      }
      throw oauthError('invalid_grant', 'invalid authorization code');
    }
    if (row.client_id !== client.clientId) throw oauthError('invalid_grant', 'authorization code was issued to another client');
    if (new Date(row.expires_at).getTime() <= now()) throw oauthError('invalid_grant', 'authorization code expired');
    if (redirectUri !== row.redirect_uri) throw oauthError('invalid_grant', 'redirect_uri does not match the one of the authorization request');
    if (!safeEqual(s256(verifier), row.code_challenge)) throw oauthError('invalid_grant', 'code_verifier does not match the code_challenge');
    checkResourceParam(body, row.resource);
    const granted = await store.liveConnectionScopes(row.connection_id);
    if (granted === undefined) throw oauthError('invalid_grant', 'the connection was disconnected');
    // The tokens follow the connection (a later consent for this client may have changed it since this code was issued).
    const answer = tokenScopes(granted, null).join(' ');
    return store.transaction((tx) =>
      issuePair(tx, { familyId: row.family_id, connectionId: row.connection_id, clientId: row.client_id, scopes: null, answer, resource: row.resource }),
    );
  }

  async function refreshGrant(body: Record<string, unknown>, client: OAuthClient): Promise<TokenResponse> {
    const token = param(body, 'refresh_token');
    if (!token) throw oauthError('invalid_request', 'refresh_token required');
    const hash = hashToken(token);
    const row = await store.refreshToken(hash);
    if (!row || row.client_id !== client.clientId) throw oauthError('invalid_grant', 'invalid refresh token');
    if (row.revoked_at || row.connection_revoked) throw oauthError('invalid_grant', 'refresh token revoked');
    if (new Date(row.expires_at).getTime() <= now()) throw oauthError('invalid_grant', 'refresh token expired');
    checkResourceParam(body, row.resource);
    // What this token may use now: the connection's scopes (narrowed or widened by a later consent), within what its client narrowed it to.
    const granted = tokenScopes(row.grant_scopes, row.scopes);
    const asked = param(body, 'scope');
    let scopes = row.scopes;
    let answer = granted;
    if (asked !== undefined && asked.trim() !== '') {
      const parsed = parseScopes(asked);
      if (!parsed?.every((s) => granted.includes(s))) throw oauthError('invalid_scope', 'scope exceeds what was granted');
      // Asking for everything the connection grants keeps following the connection.
      if (!(row.scopes === null && parsed.length === granted.length)) scopes = parsed.join(' ');
      answer = parsed;
    }
    if (answer.length === 0) throw oauthError('invalid_grant', 'the connection no longer grants any scope this token was narrowed to; authorize again');
    if (!row.rotated_at) {
      const rotated = await store
        .transaction(async (tx) => {
          const pair = await issuePair(tx, {
            familyId: row.family_id,
            connectionId: row.connection_id,
            clientId: row.client_id,
            scopes,
            answer: answer.join(' '),
            resource: row.resource,
          });
          const sealed = seal(token, { access: pair.access_token, refresh: pair.refresh_token } satisfies Successor);
          if (!(await store.markRotated(tx, hash, new Date(now()), sealed))) throw new RotationRace();
          return pair;
        })
        .catch((err: unknown) => {
          if (err instanceof RotationRace) return undefined;
          throw err;
        });
      if (rotated) return rotated;
    }
    // Already rotated: a retry inside the grace window gets the same pair, anything else is reuse.
    const again = await store.refreshToken(hash);
    if (again?.rotated_at && again.successor && !again.revoked_at && now() - new Date(again.rotated_at).getTime() <= o.refreshGraceMs) {
      const successor = unseal<Successor>(token, again.successor);
      if (successor) {
        const rows = await store.liveSuccessors([hashToken(successor.access), hashToken(successor.refresh)]);
        const access = rows.find((r) => r.kind === 'access');
        if (rows.length === 2 && access) {
          return {
            access_token: successor.access,
            token_type: 'Bearer',
            expires_in: Math.max(0, Math.floor((new Date(access.expires_at).getTime() - now()) / 1000)),
            refresh_token: successor.refresh,
            // What the pair may use now, as a first answer would say it.
            scope: tokenScopes(access.grant_scopes, access.scopes).join(' '),
          };
        }
      }
    }
    await revokeFamily(row.family_id);
    throw oauthError('invalid_grant', 'refresh token already used; every token of this grant is revoked');
  }

  return {
    async token(body, authorization) {
      const grantType = param(body, 'grant_type');
      const client = await o.clients.authenticate(body, authorization);
      if (grantType === 'authorization_code') return codeGrant(body, client);
      if (grantType === 'refresh_token') return refreshGrant(body, client);
      if (!grantType) throw oauthError('invalid_request', 'grant_type required');
      throw oauthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    },

    async revoke(body, authorization) {
      const client = await o.clients.authenticate(body, authorization);
      const token = param(body, 'token');
      if (!token) throw oauthError('invalid_request', 'token required');
      const row = await store.tokenByHash(hashToken(token));
      if (!row || row.client_id !== client.clientId) return;
      if (row.kind === 'refresh') await revokeFamily(row.family_id);
      else await store.revokeToken(hashToken(token), new Date(now()));
    },

    async authenticate(token, audience) {
      if (!token.startsWith(ACCESS_PREFIX) || token.length > 100) return undefined;
      const row = await store.accessToken(hashToken(token), new Date(now()));
      if (!row || (audience !== undefined && row.resource !== audience)) return undefined;
      if (!row.last_used_at || now() - new Date(row.last_used_at).getTime() > 60_000) store.touchConnection(row.connection_id, new Date(now()));
      return {
        user: {
          id: row.id,
          email: row.email,
          walletAddress: row.wallet_address,
          isPublisher: row.is_publisher,
          publisherName: row.publisher_name,
          createdAt: new Date(row.created_at),
        },
        via: 'oauth',
        credentialId: row.connection_id,
        clientId: row.client_id,
        scopes: tokenScopes(row.grant_scopes, row.scopes),
        ...policyOf(row),
      };
    },
  };
}

function policyOf(row: AccessTokenRow): { policy?: SpendingPolicy } {
  const policy = policyFromRow(row);
  return policy ? { policy } : {};
}
