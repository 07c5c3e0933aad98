import { randomBytes } from 'node:crypto';
import { inputs } from '@farebox/contract';
import type { z } from 'zod';
import { prepared } from '@farebox/ledger';
import type { WalletProvider } from '@farebox/wallets';
import type { BudgetUse } from '@farebox/ledger';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import { systemClock, type Clock } from '../clock.js';
import { CredentialCache } from './credential-cache.js';
import { parsePolicy, policyFromRow, policyParams, policyView, budgetFor, POLICY_COLUMNS, type PolicyRow, type SpendingPolicy } from './policy.js';
import { DUMMY_PASSWORD_HASH, hashPassword, verifyPassword } from './passwords.js';
import { API_KEY_PREFIX, generateApiKey, hashToken, isWellFormedApiKey, randomToken } from './tokens.js';

export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;

// Every authenticated request runs one of these: prepared once per connection.
const API_KEY_LOOKUP = prepared(
  'gw_api_key_lookup',
  `SELECT u.id, u.email, u.wallet_address, u.is_publisher, u.publisher_name, u.created_at, k.id AS key_id, k.kind AS key_kind, k.last_used_at,
          k.limit_units, k.limit_period, k.allowed_services, k.max_call_units
     FROM gw_api_keys k JOIN gw_users u ON u.id = k.user_id
    WHERE k.key_hash = $1 AND k.revoked_at IS NULL`,
);
const SESSION_LOOKUP = prepared(
  'gw_session_lookup',
  `SELECT u.id, u.email, u.wallet_address, u.is_publisher, u.publisher_name, u.created_at, s.csrf_token
     FROM gw_sessions s JOIN gw_users u ON u.id = s.user_id
    WHERE s.token_hash = $1 AND s.expires_at > $2`,
);

export interface User {
  id: string;
  email: string;
  walletAddress: string;
  isPublisher: boolean;
  publisherName: string | null;
  createdAt: Date;
}

/** Who is calling, and with which credential. */
export interface Principal {
  user: User;
  via: 'api_key' | 'session' | 'oauth';
  /** API key id, session hash or OAuth connection id. */
  credentialId: string;
  /** Set for session credentials: writes must present it (CSRF). */
  csrfToken?: string;
  /** Set for OAuth credentials: the scopes the user granted the connection. */
  scopes?: readonly string[];
  /** The OAuth client, for OAuth credentials (rate limited per client). */
  clientId?: string;
  /** The spending policy of the API key or OAuth connection, if it has one. */
  policy?: SpendingPolicy;
  /** Set for API keys: `spend` (call, search, read its own) or `manage` (everything the owner may do). */
  keyKind?: ApiKeyKind;
}

/** What an API key may do (docs/api.md, "Credentials and what each may do"). */
export type ApiKeyKind = 'spend' | 'manage';

type UserRow = {
  id: string;
  email: string;
  wallet_address: string;
  is_publisher: boolean;
  publisher_name: string | null;
  created_at: Date | string;
};

const toUser = (r: UserRow): User => ({
  id: r.id,
  email: r.email,
  walletAddress: r.wallet_address,
  isPublisher: r.is_publisher,
  publisherName: r.publisher_name,
  createdAt: new Date(r.created_at),
});

const USER_COLUMNS = 'id, email, wallet_address, is_publisher, publisher_name, created_at';

/** Creates the ledger account of a new user, with the sign-up credit exactly once. */
export interface CreditAccounts {
  openAccount(accountId: string): Promise<void>;
}

/** The sign-up and sign-in bodies are the contract's (@farebox/contract). */
const SignupSchema = inputs.SignupBody;
const LoginSchema = inputs.LoginBody;

/** `{ name }` of an API key and of a publisher (the contract's, @farebox/contract). */
const ApiKeyNameSchema = inputs.NameBody;

function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
  return r.data;
}

const KEY_WITH_POLICY = 'a key with a spending policy is a spend key: leave kind out or send kind "spend"';

const newId = (prefix: string) => `${prefix}_${randomBytes(12).toString('base64url')}`;

export interface AccountsOptions {
  db: Db;
  wallets: WalletProvider;
  credits: CreditAccounts;
  /** API-key principals kept for a few seconds (default: a local cache; revocations reach other instances through its bus). */
  cache?: CredentialCache;
  /** Called after an account is created (its wallet's set-up job is due). */
  onSignup?: (user: User) => void;
  /** The gateway's clock (default `Date.now`): sessions' expiry and API keys' `last_used_at`. */
  now?: Clock;
  /** What credentials spent per period (the ledger's budgets), for the keys' lists. */
  budgets?: (of: Array<{ credential: string; period: string }>) => Promise<Map<string, BudgetUse>>;
}

type KeyRow = PolicyRow & { id: string; name: string; prefix: string; kind: ApiKeyKind; created_at: Date | string; last_used_at: Date | string | null };
const KEY_COLUMNS = `id, name, prefix, kind, created_at, last_used_at, ${POLICY_COLUMNS}`;

/** Sign-up, sign-in, sessions and API keys. */
export function createAccounts({ db, wallets, credits, cache = new CredentialCache(), onSignup, now = systemClock, budgets }: AccountsOptions) {
  async function userById(id: string): Promise<User | undefined> {
    const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM gw_users WHERE id = $1`, [id]);
    return rows[0] ? toUser(rows[0]) : undefined;
  }

  /** `last_used_at` is refreshed at most once a minute, off the request's path. */
  function touchKey(keyId: string) {
    void db
      .query(`UPDATE gw_api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute')`, [
        keyId,
        new Date(now()),
      ])
      .catch(() => undefined);
  }

  /** Keys as the API lists them: with their policy and its budget this period. */
  async function keyViews(rows: KeyRow[]) {
    const at = now();
    const wanted = rows.flatMap((r) => {
      const b = budgetFor(r.id, policyFromRow(r), at);
      return b ? [b] : [];
    });
    const used = budgets && wanted.length > 0 ? await budgets(wanted) : new Map<string, BudgetUse>();
    return rows.map((r) => {
      const policy = policyFromRow(r);
      const b = budgetFor(r.id, policy, at);
      return {
        id: r.id,
        name: r.name,
        prefix: r.prefix,
        kind: r.kind,
        created_at: new Date(r.created_at).toISOString(),
        last_used_at: r.last_used_at ? new Date(r.last_used_at).toISOString() : null,
        ...policyView(policy, b ? used.get(`${b.credential}\n${b.period}`) : undefined, at),
      };
    });
  }

  async function newSession(userId: string) {
    const token = randomToken();
    const csrfToken = randomToken();
    const expiresAt = new Date(now() + SESSION_TTL_MS);
    await db.query('INSERT INTO gw_sessions (token_hash, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4)', [
      hashToken(token),
      userId,
      csrfToken,
      expiresAt,
    ]);
    return { token, csrfToken, expiresAt };
  }

  return {
    userById,

    /** Creates an account (wallet, credits with the 5 USD sign-up credit) and a session. */
    async signup(input: unknown) {
      const { email, password } = parse(SignupSchema, input);
      const normalized = email.toLowerCase();
      const existing = await db.query('SELECT 1 FROM gw_users WHERE email_normalized = $1', [normalized]);
      if (existing.rows.length > 0) throw new GatewayError('CONFLICT', 'email already registered');
      const id = newId('acct');
      const [passwordHash, walletAddress] = await Promise.all([hashPassword(password), wallets.create(`account:${id}`)]);
      const inserted = await db.query<UserRow>(
        `INSERT INTO gw_users (id, email, email_normalized, password_hash, wallet_address) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (email_normalized) DO NOTHING RETURNING ${USER_COLUMNS}`,
        [id, email, normalized, passwordHash, walletAddress],
      );
      if (!inserted.rows[0]) throw new GatewayError('CONFLICT', 'email already registered');
      await credits.openAccount(id);
      const user = toUser(inserted.rows[0]);
      onSignup?.(user);
      return { user, session: await newSession(id) };
    },

    /** Checks credentials (constant time whether or not the account exists) and opens a session. */
    async login(input: unknown) {
      const { email, password } = parse(LoginSchema, input);
      const { rows } = await db.query<UserRow & { password_hash: string }>(`SELECT ${USER_COLUMNS}, password_hash FROM gw_users WHERE email_normalized = $1`, [
        email.toLowerCase(),
      ]);
      const row = rows[0];
      const ok = await verifyPassword(password, row?.password_hash ?? DUMMY_PASSWORD_HASH);
      if (!row || !ok) throw new GatewayError('UNAUTHENTICATED', 'invalid email or password');
      // Repairs an account whose sign-up was interrupted before its credits were opened.
      await credits.openAccount(row.id);
      return { user: toUser(row), session: await newSession(row.id) };
    },

    async logout(sessionToken: string) {
      await db.query('DELETE FROM gw_sessions WHERE token_hash = $1', [hashToken(sessionToken)]);
    },

    /** The principal for a session cookie, if the session is live. */
    async fromSession(token: string): Promise<Principal | undefined> {
      if (!token || token.length > 100) return undefined;
      const hash = hashToken(token);
      // Expiry by the gateway's clock, which set it (newSession), not the database's.
      const { rows } = await db.query<UserRow & { csrf_token: string }>(SESSION_LOOKUP, [hash, new Date(now())]);
      const row = rows[0];
      return row ? { user: toUser(row), via: 'session', credentialId: hash, csrfToken: row.csrf_token } : undefined;
    },

    /** The principal for an API key, if it is live. `last_used_at` is refreshed at most once a minute. */
    async fromApiKey(key: string): Promise<Principal | undefined> {
      if (!isWellFormedApiKey(key)) return undefined;
      const hash = hashToken(key);
      const cached = cache.get(hash);
      if (cached) {
        if (cached.touch) touchKey(cached.principal.credentialId);
        return cached.principal;
      }
      const generation = cache.generation();
      const { rows } = await db.query<UserRow & PolicyRow & { key_id: string; key_kind: ApiKeyKind; last_used_at: Date | string | null }>(API_KEY_LOOKUP, [
        hash,
      ]);
      const row = rows[0];
      if (!row) return undefined;
      let lastUsedAt = row.last_used_at ? new Date(row.last_used_at).getTime() : 0;
      if (now() - lastUsedAt > 60_000) {
        touchKey(row.key_id);
        lastUsedAt = now();
      }
      const policy = policyFromRow(row);
      const principal: Principal = { user: toUser(row), via: 'api_key', credentialId: row.key_id, keyKind: row.key_kind, ...(policy ? { policy } : {}) };
      cache.set(hash, principal, row.key_id, lastUsedAt, generation);
      return principal;
    },

    async createApiKey(userId: string, input: unknown) {
      const { kind: asked, ...fields } = parse(inputs.CreateApiKeyBody, input);
      const policy = parsePolicy(fields);
      if (policy && asked === 'manage') throw new GatewayError('BAD_REQUEST', KEY_WITH_POLICY);
      const kind: ApiKeyKind = asked ?? (policy ? 'spend' : 'manage');
      const { key, prefix } = generateApiKey();
      const id = newId('key');
      const { rows } = await db.query<{ created_at: Date | string }>(
        `INSERT INTO gw_api_keys (id, user_id, name, prefix, key_hash, kind, ${POLICY_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8, $9::text[], $10::bigint) RETURNING created_at`,
        [id, userId, fields.name, prefix, hashToken(key), kind, ...policyParams(policy)],
      );
      return { id, name: fields.name, key, prefix, kind, created_at: new Date(rows[0]!.created_at).toISOString(), ...policyView(policy, undefined, now()) };
    },

    async listApiKeys(userId: string) {
      const { rows } = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM gw_api_keys WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at DESC, id`, [
        userId,
      ]);
      return keyViews(rows);
    },

    /** Renames a key or changes its policy; the next call made with it (on any gateway) follows the new policy. */
    async updateApiKey(userId: string, id: string, input: unknown) {
      const body = parse(inputs.UpdateApiKeyBody, input);
      const { rows: found } = await db.query<KeyRow>(`SELECT ${KEY_COLUMNS} FROM gw_api_keys WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`, [
        id,
        userId,
      ]);
      if (!found[0]) throw new GatewayError('NOT_FOUND', 'api key not found');
      const policy = parsePolicy(body, policyFromRow(found[0]));
      // A policy makes a key a spend key for good: removing it later does not give the key its management back.
      const { rows } = await db.query<KeyRow>(
        `UPDATE gw_api_keys SET name = COALESCE($3, name), kind = CASE WHEN $8 THEN 'spend' ELSE kind END,
                limit_units = $4::bigint, limit_period = $5, allowed_services = $6::text[], max_call_units = $7::bigint
          WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING ${KEY_COLUMNS}`,
        [id, userId, body.name ?? null, ...policyParams(policy), policy !== undefined],
      );
      if (!rows[0]) throw new GatewayError('NOT_FOUND', 'api key not found');
      cache.invalidate({ keyId: id });
      return (await keyViews(rows))[0]!;
    },

    async revokeApiKey(userId: string, id: string) {
      const { rowCount } = await db.query('UPDATE gw_api_keys SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL', [id, userId]);
      if (!rowCount) throw new GatewayError('NOT_FOUND', 'api key not found');
      cache.invalidate({ keyId: id });
      return { id, revoked: true };
    },

    async activatePublisher(userId: string, input: unknown) {
      const { name } = parse(ApiKeyNameSchema, input);
      const { rows } = await db.query<UserRow>(
        `UPDATE gw_users SET is_publisher = true, publisher_name = $2, publisher_activated_at = COALESCE(publisher_activated_at, now())
          WHERE id = $1 RETURNING ${USER_COLUMNS}`,
        [userId, name.trim()],
      );
      if (!rows[0]) throw new GatewayError('NOT_FOUND', 'account not found');
      cache.invalidate({ userId });
      return toUser(rows[0]);
    },

    /** Stops serving cached credentials (the bus's connection). */
    close() {
      cache.close();
    },
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
export { API_KEY_PREFIX };
