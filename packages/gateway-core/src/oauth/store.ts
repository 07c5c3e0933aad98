import { prepared, type Database } from '@farebox/ledger';
import { POLICY_COLUMNS, policyFromRow, policyParams, type PolicyRow, type SpendingPolicy } from '../auth/policy.js';
import type { Db } from '../db.js';
import type { OAuthClient, TokenEndpointAuthMethod } from './types.js';

// Every request with an OAuth access token runs it: prepared once per connection.
// The connection (the grant) is joined: its scopes and its revocation apply to every token at once.
const OAUTH_TOKEN_LOOKUP = prepared(
  'gw_oauth_token_lookup',
  `SELECT u.id, u.email, u.wallet_address, u.is_publisher, u.publisher_name, u.created_at, t.connection_id, c.client_id, t.scopes, c.scopes AS grant_scopes, t.resource, c.last_used_at,
          c.limit_units, c.limit_period, c.allowed_services, c.max_call_units
     FROM gw_oauth_tokens t
     JOIN gw_oauth_connections c ON c.id = t.connection_id
     JOIN gw_users u ON u.id = c.user_id
    WHERE t.token_hash = $1 AND t.kind = 'access' AND t.revoked_at IS NULL AND c.revoked_at IS NULL AND t.expires_at > $2`,
);

type ClientRow = {
  client_id: string;
  secret_hash: string | null;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  client_name: string;
  redirect_uris: string[] | string;
  metadata: Record<string, unknown> | string;
};

const jsonOf = <T>(v: T | string): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
const toClient = (r: ClientRow): OAuthClient => {
  const meta = jsonOf(r.metadata);
  return {
    clientId: r.client_id,
    clientName: r.client_name,
    redirectUris: jsonOf(r.redirect_uris),
    tokenEndpointAuthMethod: r.token_endpoint_auth_method,
    clientUri: typeof meta.client_uri === 'string' ? meta.client_uri : undefined,
    ...(meta.client_id_metadata_document === true ? { metadataDocumentHost: new URL(r.client_id).host } : {}),
  };
};

/** A row of an access token's lookup: the user, the connection (with its spending policy) and the token's scopes. */
export interface AccessTokenRow extends PolicyRow {
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
}

/** A refresh token with its connection's scopes and revocation. */
export interface RefreshTokenRow {
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
}

/** An authorization code, burnt on first use. */
export interface CodeRow {
  family_id: string;
  connection_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  scopes: string;
  resource: string;
  expires_at: Date | string;
}

/** One new token of a grant (stored by hash). */
export interface TokenRecord {
  tokenHash: string;
  kind: 'access' | 'refresh';
  familyId: string;
  connectionId: string;
  clientId: string;
  scopes: string | null;
  resource: string;
  expiresAt: Date;
  createdAt: Date;
}

/** Every query of the authorization server (tables `gw_oauth_*`). */
export function createOAuthStore(db: Database) {
  return {
    async clientById(clientId: string): Promise<(OAuthClient & { secretHash: string | null }) | undefined> {
      // No client id carries NUL (PostgreSQL text cannot): an unknown client, not a failed query.
      if (clientId.includes('\u0000')) return undefined;
      const { rows } = await db.query<ClientRow>(
        'SELECT client_id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata FROM gw_oauth_clients WHERE client_id = $1',
        [clientId],
      );
      return rows[0] ? { ...toClient(rows[0]), secretHash: rows[0].secret_hash } : undefined;
    },
    async insertClient(c: {
      clientId: string;
      secretHash: string | null;
      method: TokenEndpointAuthMethod;
      clientName: string;
      redirectUris: string[];
      metadata: object;
      createdAt: Date;
    }): Promise<void> {
      await db.query(
        'INSERT INTO gw_oauth_clients (client_id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [c.clientId, c.secretHash, c.method, c.clientName, JSON.stringify(c.redirectUris), JSON.stringify(c.metadata), c.createdAt],
      );
    },
    /** A client identified by its metadata document: created, or updated to what the document says now. */
    async upsertMetadataClient(c: { clientId: string; clientName: string; redirectUris: string[]; metadata: object; createdAt: Date }): Promise<void> {
      await db.query(
        `INSERT INTO gw_oauth_clients (client_id, secret_hash, token_endpoint_auth_method, client_name, redirect_uris, metadata, created_at)
         VALUES ($1, NULL, 'none', $2, $3, $4, $5)
         ON CONFLICT (client_id) DO UPDATE SET client_name = EXCLUDED.client_name, redirect_uris = EXCLUDED.redirect_uris, metadata = EXCLUDED.metadata`,
        [c.clientId, c.clientName, JSON.stringify(c.redirectUris), JSON.stringify(c.metadata), c.createdAt],
      );
    },
    /** The user's live connection to the client with its spending policy (the consent page shows it). */
    async ownedConnection(userId: string, clientId: string): Promise<{ policy: SpendingPolicy | undefined } | undefined> {
      const { rows } = await db.query<PolicyRow>(
        `SELECT ${POLICY_COLUMNS} FROM gw_oauth_connections WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL`,
        [userId, clientId],
      );
      return rows[0] ? { policy: policyFromRow(rows[0]) } : undefined;
    },
    /** Creates the user's connection to the client, or updates its scopes and spending policy; its id. */
    async upsertConnection(c: {
      id: string;
      userId: string;
      clientId: string;
      scopes: string;
      policy: SpendingPolicy | undefined;
      createdAt: Date;
    }): Promise<string> {
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO gw_oauth_connections (id, user_id, client_id, scopes, limit_units, limit_period, allowed_services, max_call_units, created_at)
         VALUES ($1, $2, $3, $4, $5::bigint, $6, $7::text[], $8::bigint, $9)
         ON CONFLICT (user_id, client_id) WHERE revoked_at IS NULL DO UPDATE SET scopes = EXCLUDED.scopes, limit_units = EXCLUDED.limit_units,
           limit_period = EXCLUDED.limit_period, allowed_services = EXCLUDED.allowed_services, max_call_units = EXCLUDED.max_call_units
         RETURNING id`,
        [c.id, c.userId, c.clientId, c.scopes, ...policyParams(c.policy), c.createdAt],
      );
      return rows[0]!.id;
    },
    async insertCode(c: {
      codeHash: string;
      familyId: string;
      connectionId: string;
      clientId: string;
      redirectUri: string;
      codeChallenge: string;
      scopes: string;
      resource: string;
      expiresAt: Date;
      createdAt: Date;
    }): Promise<void> {
      await db.query(
        `INSERT INTO gw_oauth_codes (code_hash, family_id, connection_id, client_id, redirect_uri, code_challenge, scopes, resource, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [c.codeHash, c.familyId, c.connectionId, c.clientId, c.redirectUri, c.codeChallenge, c.scopes, c.resource, c.expiresAt, c.createdAt],
      );
    },
    /** Marks the code used and returns it; undefined when unknown or already used. */
    async burnCode(codeHash: string, at: Date): Promise<CodeRow | undefined> {
      const { rows } = await db.query<CodeRow>(
        'UPDATE gw_oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL RETURNING family_id, connection_id, client_id, redirect_uri, code_challenge, scopes, resource, expires_at',
        [codeHash, at],
      );
      return rows[0];
    },
    async codeFamily(codeHash: string): Promise<string | undefined> {
      const { rows } = await db.query<{ family_id: string }>('SELECT family_id FROM gw_oauth_codes WHERE code_hash = $1', [codeHash]);
      return rows[0]?.family_id;
    },
    async insertToken(tx: Db, t: TokenRecord): Promise<void> {
      await tx.query(
        `INSERT INTO gw_oauth_tokens (token_hash, kind, family_id, connection_id, client_id, scopes, resource, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [t.tokenHash, t.kind, t.familyId, t.connectionId, t.clientId, t.scopes, t.resource, t.expiresAt, t.createdAt],
      );
    },
    async refreshToken(tokenHash: string): Promise<RefreshTokenRow | undefined> {
      const { rows } = await db.query<RefreshTokenRow>(
        `SELECT t.token_hash, t.family_id, t.connection_id, t.client_id, t.scopes, c.scopes AS grant_scopes, t.resource, t.expires_at, t.rotated_at, t.successor, t.revoked_at, c.revoked_at AS connection_revoked
           FROM gw_oauth_tokens t JOIN gw_oauth_connections c ON c.id = t.connection_id
          WHERE t.token_hash = $1 AND t.kind = 'refresh'`,
        [tokenHash],
      );
      return rows[0];
    },
    /** Records the rotation of a refresh token (once); false when another request rotated or revoked it first. */
    async markRotated(tx: Db, tokenHash: string, at: Date, sealedSuccessor: string): Promise<boolean> {
      const upd = await tx.query(
        'UPDATE gw_oauth_tokens SET rotated_at = $2, successor = $3 WHERE token_hash = $1 AND rotated_at IS NULL AND revoked_at IS NULL',
        [tokenHash, at, sealedSuccessor],
      );
      return !!upd.rowCount;
    },
    /** The live tokens among `hashes` (an access token, or a refresh token not rotated yet). */
    async liveSuccessors(hashes: string[]): Promise<Array<{ kind: string; expires_at: Date | string; scopes: string | null; grant_scopes: string }>> {
      const { rows } = await db.query<{ kind: string; expires_at: Date | string; scopes: string | null; grant_scopes: string }>(
        `SELECT t.kind, t.expires_at, t.scopes, c.scopes AS grant_scopes
           FROM gw_oauth_tokens t JOIN gw_oauth_connections c ON c.id = t.connection_id
          WHERE t.token_hash = ANY($1::text[]) AND t.revoked_at IS NULL AND c.revoked_at IS NULL AND (t.kind = 'access' OR t.rotated_at IS NULL)`,
        [hashes],
      );
      return rows;
    },
    async revokeFamily(familyId: string, at: Date): Promise<void> {
      await db.query('UPDATE gw_oauth_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL', [familyId, at]);
    },
    async tokenByHash(tokenHash: string): Promise<{ kind: string; family_id: string; client_id: string } | undefined> {
      const { rows } = await db.query<{ kind: string; family_id: string; client_id: string }>(
        'SELECT kind, family_id, client_id FROM gw_oauth_tokens WHERE token_hash = $1',
        [tokenHash],
      );
      return rows[0];
    },
    async revokeToken(tokenHash: string, at: Date): Promise<void> {
      await db.query('UPDATE gw_oauth_tokens SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL', [tokenHash, at]);
    },
    /** The scopes a live connection grants now; undefined once disconnected. */
    async liveConnectionScopes(connectionId: string): Promise<string | undefined> {
      const { rows } = await db.query<{ scopes: string }>('SELECT scopes FROM gw_oauth_connections WHERE id = $1 AND revoked_at IS NULL', [connectionId]);
      return rows[0]?.scopes;
    },
    async accessToken(tokenHash: string, at: Date): Promise<AccessTokenRow | undefined> {
      const { rows } = await db.query<AccessTokenRow>(OAUTH_TOKEN_LOOKUP, [tokenHash, at]);
      return rows[0];
    },
    touchConnection(connectionId: string, at: Date): void {
      void db.query('UPDATE gw_oauth_connections SET last_used_at = $2 WHERE id = $1', [connectionId, at]).catch(() => undefined);
    },
    /** Disconnects the connection and revokes its tokens in one transaction; false when it is not the user's live connection. */
    async revokeConnection(userId: string, id: string, at: Date): Promise<boolean> {
      return db.transaction(async (tx) => {
        const { rowCount } = await tx.query('UPDATE gw_oauth_connections SET revoked_at = $3 WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL', [
          id,
          userId,
          at,
        ]);
        if (!rowCount) return false;
        await tx.query('UPDATE gw_oauth_tokens SET revoked_at = $2 WHERE connection_id = $1 AND revoked_at IS NULL', [id, at]);
        return true;
      });
    },
    transaction: <T>(fn: (tx: Db) => Promise<T>): Promise<T> => db.transaction(fn),
  };
}

export type OAuthStore = ReturnType<typeof createOAuthStore>;
