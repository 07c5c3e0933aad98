import { PGlite } from '@electric-sql/pglite';
import { createPgConfig } from '@electric-sql/pglite/node-postgres';
import { chmod, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import type { QueryResult, QueryResultRow } from 'pg';
import { LedgerError, sqlState } from './errors.js';
import { acquireDirectoryLock, LOCK_FILE_NAME, type DirectoryLock } from './lock.js';
import { createFreshPglite } from './pglite-template.js';

/** Anything that runs a parameterised SQL statement: the database or an open transaction. */
export interface Queryable {
  query<R extends QueryResultRow = QueryResultRow>(text: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
}

/**
 * One `pg` code path for both back ends: a `pg.Pool` on a PostgreSQL server,
 * or a one-connection `pg.Pool` on embedded PGlite (its node-postgres adapter).
 * BIGINT comes back as a decimal string in both.
 */
export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** The schema every statement runs in (search_path), when one was chosen. */
  readonly schema: string | undefined;
  /** The underlying pool, for packages that need a raw client. */
  readonly pool: pg.Pool;
  /**
   * Runs `fn` in a transaction (READ COMMITTED). It commits when `fn`
   * resolves and rolls back when it throws; a deadlock or serialization
   * failure is retried a few times.
   */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  /** PostgreSQL connection string; defaults to `DATABASE_URL`. */
  url?: string;
  /** PGlite data directory, used when no URL is set. `memory://` for a throwaway database. */
  dataDir?: string;
  /** Run everything in this schema (created when missing); used to isolate test runs. */
  schema?: string;
  /** Pool size on PostgreSQL (default 10). PGlite has one connection. */
  poolSize?: number;
  /**
   * How long a new PostgreSQL connection may take before the attempt fails
   * (default 5000 ms). A server that stops answering without refusing would
   * otherwise leave every call waiting; with the bound the caller gets the
   * database-unavailable answer and retries.
   */
  connectTimeoutMs?: number;
  /** Environment to read `DATABASE_URL` from (the host passes its own; none when omitted). */
  env?: Record<string, string | undefined>;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const RETRYABLE = new Set(['40001', '40P01']);
/** A prepared statement's cached plan no longer fits after a schema change (another instance migrated). */
const STALE_PLAN = '0A000';

const PREPARED = new Map<string, string>();

/**
 * A condition that is always true and sets synchronous_commit off for the
 * statement's own transaction only (is_local): its commit does not wait for
 * the WAL flush. Evaluated once (an initplan). Used where a later durable
 * commit flushes the log first (a hold, an idempotency claim).
 */
export const ASYNC_COMMIT_CONDITION = "(SELECT set_config('synchronous_commit', 'off', true)) = 'off'";

/**
 * Marks a hot statement as prepared: each connection parses and plans it
 * once (`name`) and then only binds and executes it, which takes the parse
 * and plan work off every call (for the call path's statements, most of the
 * database's CPU per call). PostgreSQL only; on PGlite it is a plain query.
 * A plan made stale by a schema change (another instance migrated) is
 * dropped with its connection and the statement runs again. Returns `text`,
 * so it can wrap a constant:
 *
 * @example
 * const HOLD = prepared('ledger_hold', 'UPDATE accounts SET ...');
 * await db.query(HOLD, [id, amount]);
 */
export function prepared(name: string, text: string): string {
  const known = PREPARED.get(text);
  if (known !== undefined && known !== name) throw new Error(`statement already prepared as ${known}`);
  for (const [otherText, otherName] of PREPARED) {
    if (otherName === name && otherText !== text) throw new Error(`prepared statement name ${name} is taken`);
  }
  PREPARED.set(text, name);
  return text;
}

function statement(kind: Database['kind'], text: string, params: readonly unknown[] | undefined): string | pg.QueryConfig {
  // PGlite is one in-process session: nothing to save on the wire, and a
  // stale plan could not be dropped without dropping its only connection.
  const name = kind === 'postgres' ? PREPARED.get(text) : undefined;
  const values = params ? [...params] : undefined;
  return name === undefined ? text : { name, text, ...(values ? { values } : {}) };
}

/**
 * Opens the database: `url` (or `DATABASE_URL`) selects a PostgreSQL server,
 * otherwise PGlite in `dataDir`, guarded by a lock file so that a second
 * process gets `LedgerError('LOCKED')` naming the holder's pid.
 *
 * @example
 * const db = await openDatabase({ dataDir: './.farebox/db' });
 * const { rows } = await db.query('SELECT 1 AS one');
 */
export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<Database> {
  const env = options.env ?? {};
  const url = options.url ?? (env.DATABASE_URL || undefined);
  const problems: string[] = [];
  if (options.schema !== undefined && !SCHEMA_NAME.test(options.schema)) {
    problems.push(`schema must match ${SCHEMA_NAME.source}`);
  }
  if (options.poolSize !== undefined && (!Number.isInteger(options.poolSize) || options.poolSize < 1)) {
    problems.push('poolSize must be a positive integer');
  }
  if (url === undefined && (options.dataDir === undefined || options.dataDir === '')) {
    problems.push('set url (or DATABASE_URL) for PostgreSQL, or dataDir for embedded PGlite');
  }
  if (problems.length > 0) {
    throw new LedgerError('CONFIG', `invalid database configuration: ${problems.join('; ')}`, { problems });
  }
  return url !== undefined ? openPostgres(url, options) : openPglite(options.dataDir ?? 'memory://', options);
}

async function openPostgres(url: string, options: OpenDatabaseOptions): Promise<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5000,
    // TCP keepalive: a connection to a server that vanished is found dead, not waited on.
    keepAlive: true,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  guardPool(pool);
  try {
    await pool.query('SELECT 1');
    if (options.schema) await createSchema(pool, options.schema);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return makeDatabase('postgres', pool, options.schema, async () => {
    await pool.end();
  });
}

async function openPglite(dataDir: string, options: OpenDatabaseOptions): Promise<Database> {
  const inMemory = dataDir.startsWith('memory://');
  const lock: DirectoryLock | undefined = inMemory ? undefined : acquireDirectoryLock(dataDir);
  let lite: PGlite | undefined;
  try {
    // A new database starts from a dump of a fresh cluster (initdb's work, done once: pglite-template.ts).
    lite = inMemory || (await isNewDataDir(dataDir)) ? await createFreshPglite(dataDir) : await PGlite.create(dataDir);
    if (!inMemory) await ownerOnly(dataDir);
    if (options.schema) {
      await lite.exec(`CREATE SCHEMA IF NOT EXISTS "${options.schema}"; SET search_path TO "${options.schema}"`);
    }
  } catch (error) {
    await lite?.close().catch(() => undefined);
    lock?.release();
    throw error;
  }
  const owned = lite;
  // PGlite is one session: one client, never closed while idle (it would
  // lose session settings such as the search_path).
  const pool = new pg.Pool({ ...createPgConfig(owned), max: 1, idleTimeoutMillis: 0 });
  guardPool(pool);
  return makeDatabase('pglite', pool, options.schema, async () => {
    try {
      await pool.end();
      await owned.close();
    } finally {
      lock?.release();
    }
  });
}

/** True when `dir` holds no database yet: it does not exist, or holds nothing but this ledger's lock. */
async function isNewDataDir(dir: string): Promise<boolean> {
  try {
    return (await readdir(dir)).every((name) => name.startsWith(LOCK_FILE_NAME));
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

/**
 * PGlite writes its data directory with the modes of its in-memory file
 * system (0666/0777): the ledger is for the gateway user only, so the tree is
 * made 0600/0700 once it is opened (files PGlite adds later follow the
 * process umask, which the gateway host sets to 077).
 */
async function ownerOnly(dir: string): Promise<void> {
  await chmod(dir, 0o700);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await ownerOnly(path);
    else if (entry.isFile()) await chmod(path, 0o600);
  }
}

async function createSchema(pool: pg.Pool, schema: string): Promise<void> {
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
  } catch (error) {
    // Two processes creating the same schema at once: the loser sees a duplicate.
    if (sqlState(error) !== '23505' && sqlState(error) !== '42P06') throw error;
  }
}

/**
 * Attached as soon as a pool exists, before its first client connects: an
 * idle client that loses its server connection emits on the pool, and a
 * checked-out one emits on itself; without listeners either would crash the
 * process. The failing query (or the next checkout) reports the problem.
 */
function guardPool(pool: pg.Pool): void {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
}

/**
 * A connection-level failure: the client must be discarded, not reused. Server
 * errors with a SQLSTATE of class 08 (connection exception) or 57 (operator
 * intervention: shutdown, admin termination) and FATAL ones end the session
 * even though they carry a code.
 */
function isConnectionError(error: unknown): boolean {
  const code = sqlState(error);
  if (code === undefined) return true;
  if (code.startsWith('08') || code.startsWith('57')) return true;
  return (error as { severity?: string }).severity === 'FATAL';
}

function makeDatabase(kind: Database['kind'], pool: pg.Pool, schema: string | undefined, end: () => Promise<void>): Database {
  let closed: Promise<void> | undefined;

  return {
    kind,
    schema,
    pool,
    // Not pool.query(): it destroys the client on any query error, and a
    // destroyed client breaks PGlite's single shared connection. A statement
    // error leaves the session usable; only a connection error discards it.
    async query<R extends QueryResultRow = QueryResultRow>(text: string, params?: readonly unknown[]) {
      const stmt = statement(kind, text, params);
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect();
        let broken: Error | undefined;
        try {
          return typeof stmt === 'string' ? await client.query<R>(stmt, params ? [...params] : undefined) : await client.query<R>(stmt);
        } catch (error) {
          const stale = typeof stmt !== 'string' && sqlState(error) === STALE_PLAN;
          if (stale || isConnectionError(error)) broken = error instanceof Error ? error : new Error(String(error));
          // A stale prepared plan lives on that connection only: drop it and run again on another.
          if (stale && attempt <= (pool.options.max ?? 10)) continue;
          throw error;
        } finally {
          client.release(broken);
        }
      }
    },
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        const client = await pool.connect();
        let broken: Error | undefined;
        try {
          await client.query('BEGIN');
          const tx: Queryable = {
            query: <R extends QueryResultRow = QueryResultRow>(text: string, params?: readonly unknown[]) => {
              const stmt = statement(kind, text, params);
              return typeof stmt === 'string' ? client.query<R>(stmt, params ? [...params] : undefined) : client.query<R>(stmt);
            },
          };
          const result = await fn(tx);
          await client.query('COMMIT');
          return result;
        } catch (error) {
          try {
            await client.query('ROLLBACK');
          } catch (rollbackError) {
            broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
          }
          if (sqlState(error) === STALE_PLAN) broken ??= error instanceof Error ? error : new Error(String(error));
          if (attempt < 5 && (RETRYABLE.has(sqlState(error) ?? '') || sqlState(error) === STALE_PLAN)) continue;
          throw error;
        } finally {
          client.release(broken);
        }
      }
    },
    close() {
      closed ??= end();
      return closed;
    },
  };
}
