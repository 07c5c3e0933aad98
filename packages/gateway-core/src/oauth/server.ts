import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { parseAmount, toJsonInteger, toUsd } from '@farebox/protocol';
import type { Principal, User } from '../auth/accounts.js';
import { hashToken, randomToken, safeEqual } from '../auth/tokens.js';
import { prepared, type Database } from '@farebox/ledger';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import { matchRedirectUri, redirectUriProblem } from './redirects.js';
import { OAUTH_SCOPES, parseScopes, SUPPORTED_SCOPES, tokenScopes, type OAuthScope } from './scopes.js';

/** Lifetimes and the clock of the authorization server (tests shorten or move them). */
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
  /** The clock, in epoch milliseconds (default `Date.now`). */
  now?: () => number;
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
  const code = typeof err.data?.oauthError === 'string' ? err.data.oauthError : err.code === 'RATE_LIMITED' ? 'temporarily_unavailable' : err.code === 'BAD_REQUEST' ? 'invalid_request' : 'server_error';
  return { error: code, error_description: err.message };
}

const ACCESS_PREFIX = 'fbo_at_';
const REFRESH_PREFIX = 'fbo_rt_';
const CODE_PREFIX = 'fbo_ac_';
const DAY_MS = 24 * 3600 * 1000;

// Every request with an OAuth access token runs it: prepared once per connection.
// The connection (the grant) is joined: its scopes and its revocation apply to every token at once.
const OAUTH_TOKEN_LOOKUP = prepared(
  'gw_oauth_token_lookup',
  `SELECT u.id, u.email, u.wallet_address, u.is_publisher, u.publisher_name, u.created_at, t.connection_id, c.client_id, t.scopes, c.scopes AS grant_scopes, t.resource, c.last_used_at
     FROM gw_oauth_tokens t
     JOIN gw_oauth_connections c ON c.id = t.connection_id
     JOIN gw_users u ON u.id = c.user_id
    WHERE t.token_hash = $1 AND t.kind = 'access' AND t.revoked_at IS NULL AND c.revoked_at IS NULL AND t.expires_at > $2`,
);

type ClientRow = {
  client_id: string;
  secret_hash: string | null;
  token_endpoint_auth_method: 'none' | 'client_secret_basic' | 'client_secret_post';
  client_name: string;
  redirect_uris: string[] | string;
  metadata: Record<string, unknown> | string;
};

export interface OAuthClient {
  clientId: string;
  clientName: string;
  redirectUris: string[];
  tokenEndpointAuthMethod: ClientRow['token_endpoint_auth_method'];
  clientUri: string | undefined;
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

const jsonOf = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
const toClient = (r: ClientRow): OAuthClient => {
  const meta = jsonOf(r.metadata);
  return {
    clientId: r.client_id,
    clientName: r.client_name,
    redirectUris: jsonOf(r.redirect_uris),
    tokenEndpointAuthMethod: r.token_endpoint_auth_method,
    clientUri: typeof meta.client_uri === 'string' ? meta.client_uri : undefined,
  };
};

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
  token_endpoint_auth_method: z.enum(['none', 'client_secret_basic', 'client_secret_post'], { error: 'token_endpoint_auth_method must be none, client_secret_basic or client_secret_post' }).optional(),
  grant_types: z.array(z.string()).optional(),
  response_types: z.array(z.string()).optional(),
  scope: z.string({ error: 'scope must be a string' }).max(512).optional(),
  client_uri: httpsUrl('client_uri').optional(),
  logo_uri: httpsUrl('logo_uri').optional(),
  tos_uri: httpsUrl('tos_uri').optional(),
  policy_uri: httpsUrl('policy_uri').optional(),
  software_id: z.string().max(200).optional(),
  software_version: z.string().max(100).optional(),
});

/** A single string parameter; a repeated one (an array) is refused, as RFC 6749 3.1 requires. */
function param(input: Record<string, unknown>, name: string): string | undefined {
  const v = input[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw oauthError('invalid_request', `${name} must be given once`);
  return v;
}

const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;
const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

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

export interface CreateOAuthOptions extends OAuthOptions {
  db: Database;
  /** The gateway's public address (the issuer). */
  baseUrl: string;
  env?: Record<string, string | undefined>;
}

/**
 * The OAuth 2.1 authorization server over the gateway database: metadata
 * (RFC 8414, RFC 9728), dynamic client registration (RFC 7591), authorization
 * codes with PKCE S256, rotating refresh tokens with reuse detection,
 * revocation (RFC 7009), audience-bound opaque access tokens stored hashed,
 * and the user's connections. Framework-agnostic: the HTTP host renders pages
 * and maps errors.
 */
export function createOAuth(options: CreateOAuthOptions) {
  const { db } = options;
  const issuer = options.baseUrl.replace(/\/+$/, '');
  const resource = `${issuer}/mcp`;
  const now = options.now ?? Date.now;
  const accessTtl = options.accessTokenTtlMs ?? 30 * DAY_MS;
  const refreshTtl = options.refreshTokenTtlMs ?? 90 * DAY_MS;
  const codeTtl = options.codeTtlMs ?? 120_000;
  const grace = options.refreshGraceMs ?? 30_000;
  const envOrigins = (options.env?.FAREBOX_MCP_ALLOWED_ORIGINS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const allowedOrigins = new Set([new URL(issuer).origin, ...(options.allowedOrigins ?? []), ...envOrigins]);

  async function clientById(clientId: string): Promise<(OAuthClient & { secretHash: string | null }) | undefined> {
    if (clientId.length > 100) return undefined;
    const { rows } = await db.query<ClientRow>('SELECT client_id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata FROM gw_oauth_clients WHERE client_id = $1', [clientId]);
    return rows[0] ? { ...toClient(rows[0]), secretHash: rows[0].secret_hash } : undefined;
  }

  function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
    const u = new URL(redirectUri);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
    // RFC 9207: the issuer in every authorization response, success or error.
    u.searchParams.set('iss', issuer);
    return u.toString();
  }

  /** Authenticates the client at /token and /revoke: none, client_secret_basic or client_secret_post, exactly as registered. */
  async function authenticateClient(body: Record<string, unknown>, authorization: string | undefined) {
    let clientId: string | undefined;
    let secret: string | undefined;
    let method: ClientRow['token_endpoint_auth_method'];
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
    const client = await clientById(clientId);
    if (!client) throw oauthError('invalid_client', 'unknown client', method === 'client_secret_basic' ? basicChallenge : undefined);
    if (client.tokenEndpointAuthMethod !== method) {
      throw oauthError('invalid_client', `this client was registered to authenticate with ${client.tokenEndpointAuthMethod}`, method === 'client_secret_basic' ? basicChallenge : undefined);
    }
    if (method !== 'none' && (!client.secretHash || !safeEqual(hashToken(secret ?? ''), client.secretHash))) {
      throw oauthError('invalid_client', 'invalid client credentials', method === 'client_secret_basic' ? basicChallenge : undefined);
    }
    return client;
  }

  async function revokeFamily(familyId: string) {
    await db.query('UPDATE gw_oauth_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL', [familyId, new Date(now())]);
  }

  /**
   * What a new pair is issued for. `scopes` is stored on the tokens: NULL makes
   * them follow the connection's scopes, a set is what the client narrowed them
   * to (still cut down by the connection). `answer` is the `scope` the response
   * states: what the tokens may use now.
   */
  type Grant = { familyId: string; connectionId: string; clientId: string; scopes: string | null; answer: string; resource: string };

  async function issuePair(tx: Db, grant: Grant): Promise<TokenResponse> {
    const access = `${ACCESS_PREFIX}${randomToken()}`;
    const refresh = `${REFRESH_PREFIX}${randomToken()}`;
    const t = now();
    const insert = `INSERT INTO gw_oauth_tokens (token_hash, kind, family_id, connection_id, client_id, scopes, resource, expires_at, created_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`;
    await tx.query(insert, [hashToken(access), 'access', grant.familyId, grant.connectionId, grant.clientId, grant.scopes, grant.resource, new Date(t + accessTtl), new Date(t)]);
    await tx.query(insert, [hashToken(refresh), 'refresh', grant.familyId, grant.connectionId, grant.clientId, grant.scopes, grant.resource, new Date(t + refreshTtl), new Date(t)]);
    return { access_token: access, token_type: 'Bearer', expires_in: Math.floor(accessTtl / 1000), refresh_token: refresh, scope: grant.answer };
  }

  function checkResourceParam(body: Record<string, unknown>, granted: string) {
    const r = param(body, 'resource');
    if (r !== undefined && r !== granted) throw oauthError('invalid_target', `this grant is for the resource ${granted}`);
  }

  /** The scopes a live connection grants now; undefined once disconnected. */
  async function liveConnectionScopes(connectionId: string): Promise<string | undefined> {
    const { rows } = await db.query<{ scopes: string }>('SELECT scopes FROM gw_oauth_connections WHERE id = $1 AND revoked_at IS NULL', [connectionId]);
    return rows[0]?.scopes;
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
    const { rows } = await db.query<{ family_id: string; connection_id: string; client_id: string; redirect_uri: string; code_challenge: string; scopes: string; resource: string; expires_at: Date | string }>(
      'UPDATE gw_oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL RETURNING family_id, connection_id, client_id, redirect_uri, code_challenge, scopes, resource, expires_at',
      [hash, new Date(now())],
    );
    const row = rows[0];
    if (!row) {
      const used = await db.query<{ family_id: string }>('SELECT family_id FROM gw_oauth_codes WHERE code_hash = $1', [hash]);
      if (used.rows[0]) {
        await revokeFamily(used.rows[0].family_id);
        throw oauthError('invalid_grant', 'authorization code already used; the tokens issued for it are revoked');
      }
      throw oauthError('invalid_grant', 'invalid authorization code');
    }
    if (row.client_id !== client.clientId) throw oauthError('invalid_grant', 'authorization code was issued to another client');
    if (new Date(row.expires_at).getTime() <= now()) throw oauthError('invalid_grant', 'authorization code expired');
    if (redirectUri !== row.redirect_uri) throw oauthError('invalid_grant', 'redirect_uri does not match the one of the authorization request');
    if (!safeEqual(s256(verifier), row.code_challenge)) throw oauthError('invalid_grant', 'code_verifier does not match the code_challenge');
    checkResourceParam(body, row.resource);
    const granted = await liveConnectionScopes(row.connection_id);
    if (granted === undefined) throw oauthError('invalid_grant', 'the connection was disconnected');
    // The tokens follow the connection (a later consent for this client may have changed it since this code was issued).
    const answer = tokenScopes(granted, null).join(' ');
    return db.transaction((tx) => issuePair(tx, { familyId: row.family_id, connectionId: row.connection_id, clientId: row.client_id, scopes: null, answer, resource: row.resource }));
  }

  type TokenRow = {
    token_hash: string;
    family_id: string;
    connection_id: string;
    client_id: string;
    scopes: string | null;
    grant_scopes: string;
    resource: string;
    expires_at: Date | string;
    rotated_at: Date | string | null;
    successor: string | null;
    revoked_at: Date | string | null;
    connection_revoked: Date | string | null;
  };
  type Successor = { access: string; refresh: string };

  async function refreshGrant(body: Record<string, unknown>, client: OAuthClient): Promise<TokenResponse> {
    const token = param(body, 'refresh_token');
    if (!token) throw oauthError('invalid_request', 'refresh_token required');
    const hash = hashToken(token);
    const read = async () =>
      (
        await db.query<TokenRow>(
          `SELECT t.token_hash, t.family_id, t.connection_id, t.client_id, t.scopes, c.scopes AS grant_scopes, t.resource, t.expires_at, t.rotated_at, t.successor, t.revoked_at, c.revoked_at AS connection_revoked
             FROM gw_oauth_tokens t JOIN gw_oauth_connections c ON c.id = t.connection_id
            WHERE t.token_hash = $1 AND t.kind = 'refresh'`,
          [hash],
        )
      ).rows[0];
    const row = await read();
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
      if (!parsed || !parsed.every((s) => granted.includes(s))) throw oauthError('invalid_scope', 'scope exceeds what was granted');
      // Asking for everything the connection grants keeps following the connection.
      if (!(row.scopes === null && parsed.length === granted.length)) scopes = parsed.join(' ');
      answer = parsed;
    }
    if (answer.length === 0) throw oauthError('invalid_grant', 'the connection no longer grants any scope this token was narrowed to; authorize again');
    if (!row.rotated_at) {
      const rotated = await db.transaction(async (tx) => {
        const pair = await issuePair(tx, { familyId: row.family_id, connectionId: row.connection_id, clientId: row.client_id, scopes, answer: answer.join(' '), resource: row.resource });
        const sealed = seal(token, { access: pair.access_token, refresh: pair.refresh_token } satisfies Successor);
        const upd = await tx.query('UPDATE gw_oauth_tokens SET rotated_at = $2, successor = $3 WHERE token_hash = $1 AND rotated_at IS NULL AND revoked_at IS NULL', [hash, new Date(now()), sealed]);
        if (!upd.rowCount) throw new RotationRace();
        return pair;
      }).catch((err: unknown) => {
        if (err instanceof RotationRace) return undefined;
        throw err;
      });
      if (rotated) return rotated;
    }
    // Already rotated: a retry inside the grace window gets the same pair, anything else is reuse.
    const again = await read();
    if (again?.rotated_at && again.successor && !again.revoked_at && now() - new Date(again.rotated_at).getTime() <= grace) {
      const successor = unseal<Successor>(token, again.successor);
      if (successor) {
        const { rows } = await db.query<{ kind: string; expires_at: Date | string; scopes: string | null; grant_scopes: string }>(
          `SELECT t.kind, t.expires_at, t.scopes, c.scopes AS grant_scopes
             FROM gw_oauth_tokens t JOIN gw_oauth_connections c ON c.id = t.connection_id
            WHERE t.token_hash = ANY($1::text[]) AND t.revoked_at IS NULL AND c.revoked_at IS NULL AND (t.kind = 'access' OR t.rotated_at IS NULL)`,
          [[hashToken(successor.access), hashToken(successor.refresh)]],
        );
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

  async function ownedConnection(userId: string, clientId: string) {
    const { rows } = await db.query<{ daily_limit: string | null }>('SELECT daily_limit FROM gw_oauth_connections WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL', [userId, clientId]);
    return rows[0] ? { dailyLimit: rows[0].daily_limit === null ? null : BigInt(rows[0].daily_limit) } : undefined;
  }

  return {
    issuer,
    /** The protected resource every access token is bound to: `{base_url}/mcp`. */
    resource,
    resourceMetadataUrl: `${issuer}/.well-known/oauth-protected-resource/mcp`,
    scopes: OAUTH_SCOPES,

    /** RFC 8414 authorization server metadata. */
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
      };
    },

    /** RFC 9728 protected resource metadata of `/mcp`. */
    resourceMetadata() {
      return {
        resource,
        authorization_servers: [issuer],
        scopes_supported: SUPPORTED_SCOPES,
        bearer_methods_supported: ['header'],
        resource_name: 'Farebox',
      };
    },

    /** True when a browser page at `origin` may call /mcp (no Origin header: not a browser, allowed). */
    originAllowed(origin: string | undefined): boolean {
      return origin === undefined || allowedOrigins.has(origin);
    },

    rateLimits: {
      register: { name: 'oauth-register-ip', limit: options.registerPerMinute ?? 20, windowMs: 60_000 },
      token: { name: 'oauth-token-ip', limit: options.tokenPerMinute ?? 120, windowMs: 60_000 },
    },

    /** RFC 7591 dynamic client registration. */
    async register(input: unknown) {
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
      if (m.scope !== undefined && !parseScopes(m.scope)) throw oauthError('invalid_client_metadata', `unknown scope; supported: ${SUPPORTED_SCOPES.join(' ')}`);
      const method = m.token_endpoint_auth_method ?? 'client_secret_basic';
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
      };
      await db.query(
        'INSERT INTO gw_oauth_clients (client_id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [clientId, secret ? hashToken(secret) : null, method, metadata.client_name, JSON.stringify(m.redirect_uris), JSON.stringify(metadata), new Date(now())],
      );
      return {
        client_id: clientId,
        ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        client_id_issued_at: issuedAt,
        ...metadata,
      };
    },

    /** Validates /authorize parameters (query or the consent form's fields). */
    async checkAuthorization(input: Record<string, unknown>): Promise<AuthorizationCheck> {
      let clientId: string | undefined;
      let redirectUri: string | undefined;
      try {
        clientId = param(input, 'client_id');
        redirectUri = param(input, 'redirect_uri');
      } catch (err) {
        return { kind: 'error_page', message: (err as Error).message };
      }
      if (!clientId) return { kind: 'error_page', message: 'client_id required' };
      const client = await clientById(clientId);
      if (!client) return { kind: 'error_page', message: 'unknown client: register it first (POST /register)' };
      if (!redirectUri) return { kind: 'error_page', message: 'redirect_uri required' };
      if (!matchRedirectUri(client.redirectUris, redirectUri)) return { kind: 'error_page', message: 'redirect_uri is not registered for this client' };
      let state: string | undefined;
      try {
        state = param(input, 'state');
      } catch {
        return { kind: 'redirect', location: redirectWith(redirectUri, { error: 'invalid_request', error_description: 'state must be given once' }) };
      }
      const fail = (error: OAuthErrorCode, description: string): AuthorizationCheck => ({ kind: 'redirect', location: redirectWith(redirectUri, { error, error_description: description, state }) });
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
        if (target !== undefined && target !== resource) return fail('invalid_target', `this server issues tokens for ${resource} only`);
        if (state !== undefined && state.length > 2048) return fail('invalid_request', 'state too long');
        return { kind: 'ok', request: { client, redirectUri, scopes, state, codeChallenge: challenge, resource } };
      } catch (err) {
        return fail('invalid_request', (err as Error).message);
      }
    },

    /** The daily limit a returning user set for this client, to prefill the consent screen. */
    existingConnection: ownedConnection,

    /**
     * The user consented: creates (or updates) the connection with its daily
     * limit and returns the redirect carrying a single-use code.
     */
    async approve(user: User, request: AuthorizationRequest, dailyLimitUsd: unknown): Promise<string> {
      let dailyLimit: bigint | null = null;
      const text = typeof dailyLimitUsd === 'string' ? dailyLimitUsd.trim().replace(/^\$/, '') : dailyLimitUsd;
      if (text !== undefined && text !== null && text !== '') {
        try {
          dailyLimit = parseAmount(typeof text === 'number' ? String(text) : (text as string));
        } catch {
          throw new GatewayError('BAD_REQUEST', 'daily spending limit must be a USD amount such as 5 or 2.50');
        }
        if (dailyLimit <= 0n || dailyLimit > parseAmount('10000')) throw new GatewayError('BAD_REQUEST', 'daily spending limit must be more than 0 and at most 10000 USD');
      }
      const scopes = request.scopes.join(' ');
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO gw_oauth_connections (id, user_id, client_id, scopes, daily_limit, created_at) VALUES ($1, $2, $3, $4, $5::bigint, $6)
         ON CONFLICT (user_id, client_id) WHERE revoked_at IS NULL DO UPDATE SET scopes = EXCLUDED.scopes, daily_limit = EXCLUDED.daily_limit
         RETURNING id`,
        [`conn_${randomToken(12)}`, user.id, request.client.clientId, scopes, dailyLimit === null ? null : dailyLimit.toString(), new Date(now())],
      );
      const code = `${CODE_PREFIX}${randomToken()}`;
      await db.query(
        `INSERT INTO gw_oauth_codes (code_hash, family_id, connection_id, client_id, redirect_uri, code_challenge, scopes, resource, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [hashToken(code), `fam_${randomToken(12)}`, rows[0]!.id, request.client.clientId, request.redirectUri, request.codeChallenge, scopes, request.resource, new Date(now() + codeTtl), new Date(now())],
      );
      return redirectWith(request.redirectUri, { code, state: request.state });
    },

    /** The user refused: the error redirect. */
    deny(request: AuthorizationRequest): string {
      return redirectWith(request.redirectUri, { error: 'access_denied', error_description: 'the user denied access', state: request.state });
    },

    /** `POST /token`: authorization_code and refresh_token grants. */
    async token(body: Record<string, unknown>, authorization: string | undefined): Promise<TokenResponse> {
      const grantType = param(body, 'grant_type');
      const client = await authenticateClient(body, authorization);
      if (grantType === 'authorization_code') return codeGrant(body, client);
      if (grantType === 'refresh_token') return refreshGrant(body, client);
      if (!grantType) throw oauthError('invalid_request', 'grant_type required');
      throw oauthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
    },

    /** `POST /revoke` (RFC 7009): revoking a refresh token revokes every token of its grant. Unknown tokens are not an error. */
    async revoke(body: Record<string, unknown>, authorization: string | undefined): Promise<void> {
      const client = await authenticateClient(body, authorization);
      const token = param(body, 'token');
      if (!token) throw oauthError('invalid_request', 'token required');
      const { rows } = await db.query<{ kind: string; family_id: string; client_id: string }>('SELECT kind, family_id, client_id FROM gw_oauth_tokens WHERE token_hash = $1', [hashToken(token)]);
      const row = rows[0];
      if (!row || row.client_id !== client.clientId) return;
      if (row.kind === 'refresh') await revokeFamily(row.family_id);
      else await db.query('UPDATE gw_oauth_tokens SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL', [hashToken(token), new Date(now())]);
    },

    /**
     * The principal for a live access token; with `audience`, only a token
     * bound to that resource (RFC 8707).
     */
    async authenticate(token: string, audience?: string): Promise<Principal | undefined> {
      if (!token.startsWith(ACCESS_PREFIX) || token.length > 100) return undefined;
      const { rows } = await db.query<{
        id: string;
        email: string;
        wallet_address: string;
        is_publisher: boolean;
        publisher_name: string | null;
        created_at: Date | string;
        connection_id: string;
        client_id: string;
        scopes: string | null;
        grant_scopes: string;
        resource: string;
        last_used_at: Date | string | null;
      }>(
        OAUTH_TOKEN_LOOKUP,
        [hashToken(token), new Date(now())],
      );
      const row = rows[0];
      if (!row || (audience !== undefined && row.resource !== audience)) return undefined;
      if (!row.last_used_at || now() - new Date(row.last_used_at).getTime() > 60_000) {
        void db.query('UPDATE gw_oauth_connections SET last_used_at = $2 WHERE id = $1', [row.connection_id, new Date(now())]).catch(() => undefined);
      }
      return {
        user: { id: row.id, email: row.email, walletAddress: row.wallet_address, isPublisher: row.is_publisher, publisherName: row.publisher_name, createdAt: new Date(row.created_at) },
        via: 'oauth',
        credentialId: row.connection_id,
        clientId: row.client_id,
        scopes: tokenScopes(row.grant_scopes, row.scopes),
      };
    },

    connections: {
      /** `GET /v1/oauth/connections`: the apps the user authorized, with today's (UTC) spending. */
      async list(userId: string) {
        const { rows } = await db.query<{ id: string; client_id: string; client_name: string; scopes: string; daily_limit: string | null; spent: string | null; created_at: Date | string; last_used_at: Date | string | null }>(
          `SELECT c.id, c.client_id, cl.client_name, c.scopes, c.daily_limit, s.spent, c.created_at, c.last_used_at
             FROM gw_oauth_connections c
             JOIN gw_oauth_clients cl ON cl.client_id = c.client_id
             LEFT JOIN gw_oauth_spend s ON s.connection_id = c.id AND s.day = $2::date
            WHERE c.user_id = $1 AND c.revoked_at IS NULL
            ORDER BY c.created_at DESC, c.id`,
          [userId, utcDay(now())],
        );
        return rows.map((r) => {
          const limit = r.daily_limit === null ? null : BigInt(r.daily_limit);
          const spent = BigInt(r.spent ?? '0');
          return {
            id: r.id,
            client_id: r.client_id,
            client_name: r.client_name,
            scopes: r.scopes.split(' '),
            daily_limit_usd: limit === null ? null : toUsd(limit),
            daily_limit_base_units: limit === null ? null : toJsonInteger(limit),
            spent_today_usd: toUsd(spent),
            spent_today_base_units: toJsonInteger(spent),
            created_at: new Date(r.created_at).toISOString(),
            last_used_at: r.last_used_at ? new Date(r.last_used_at).toISOString() : null,
          };
        });
      },
      /** `DELETE /v1/oauth/connections/:id`: disconnects the app and revokes every token it holds. */
      async revoke(userId: string, id: string) {
        return db.transaction(async (tx) => {
          const at = new Date(now());
          const { rowCount } = await tx.query('UPDATE gw_oauth_connections SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL', [id, userId, at]);
          if (!rowCount) throw new GatewayError('NOT_FOUND', 'connection not found');
          await tx.query('UPDATE gw_oauth_tokens SET revoked_at = $2 WHERE connection_id = $1 AND revoked_at IS NULL', [id, at]);
          return { id, revoked: true };
        });
      },
    },
  };
}

class RotationRace extends Error {}

export type OAuthServer = ReturnType<typeof createOAuth>;
export { utcDay };
