import type { Database } from '@farebox/ledger';
import { GatewayError } from './errors.js';
import { reasonOf, type DependencyTracker } from './observability/dependencies.js';

/** Seconds a caller is asked to wait (`Retry-After`) while the database is unreachable. */
export const DATABASE_RETRY_AFTER_S = 5;

/** The API's answer while the database cannot be reached (503, docs/api.md "Errors"). */
export const DATABASE_UNAVAILABLE_MESSAGE = 'database unavailable; nothing was charged, retry in a few seconds';

/** Node's socket errors that mean the server could not be reached or the connection died. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** SQLSTATEs of a server that is going away or refuses sessions: admin, crash and start-up shutdown, too many connections. */
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** What `pg` throws without a code when a connection dies or cannot be had. */
const CONNECTION_MESSAGES =
  /^(Connection terminated( unexpectedly| due to connection timeout)?|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable|Connection closed)$/;

/**
 * Whether `err` (or an error it wraps through `cause`) says the database
 * could not be reached: a refused, reset or timed-out connection, a
 * connection exception (SQLSTATE class 08), a server shutting down or
 * starting (`57P01` admin shutdown, `57P02`, `57P03`), too many connections
 * (`53300`), the pool's connect timeout, or `pg`'s "Connection terminated".
 * A statement's own error (a constraint, a syntax error) is not one.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof GatewayError) return e.code === 'UNAVAILABLE' && e.data?.dependency === 'database';
    const x = e as { code?: unknown; message?: unknown };
    if (typeof x.code === 'string') {
      if (SOCKET_CODES.has(x.code) || UNAVAILABLE_STATES.has(x.code) || /^08[0-9A-Z]{3}$/.test(x.code)) return true;
    }
    if (typeof x.message === 'string' && CONNECTION_MESSAGES.test(x.message)) return true;
  }
  return false;
}

/**
 * The typed error of a database outage: `UNAVAILABLE` (503) with
 * `Retry-After`, `data.dependency` `database`, and the driver's error as its
 * cause. The hosts answer it instead of `500 internal error`.
 */
export function databaseUnavailable(cause?: unknown): GatewayError {
  return new GatewayError(
    'UNAVAILABLE',
    DATABASE_UNAVAILABLE_MESSAGE,
    { dependency: 'database', retryAfterSeconds: DATABASE_RETRY_AFTER_S },
    { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
    { cause },
  );
}

/** `err` as the database-unavailable {@link GatewayError} when it is a connection failure, else undefined. */
export function asDatabaseUnavailable(err: unknown): GatewayError | undefined {
  if (err instanceof GatewayError) return err.code === 'UNAVAILABLE' && err.data?.dependency === 'database' ? err : undefined;
  return isDatabaseUnavailable(err) ? databaseUnavailable(err) : undefined;
}

/**
 * `db` whose statements and transactions report to `deps` (`database`): an
 * answer marks it up, a connection failure ({@link isDatabaseUnavailable})
 * marks it down. Results and errors pass through unchanged.
 */
export function trackDatabase(db: Database, deps: DependencyTracker): Database {
  deps.watch('database');
  const failed = (err: unknown): never => {
    if (isDatabaseUnavailable(err)) deps.down('database', reasonOf(err));
    else deps.up('database');
    throw err;
  };
  const query = ((text: string, params?: readonly unknown[]) =>
    db.query(text, params).then((r) => {
      deps.up('database');
      return r;
    }, failed)) as Database['query'];
  const transaction: Database['transaction'] = (fn) =>
    db.transaction(fn).then((r) => {
      deps.up('database');
      return r;
    }, failed);
  // The pool, kind, schema and close() are the database's own (its prototype).
  const tracked: Database = Object.create(db, { query: { value: query }, transaction: { value: transaction } });
  return tracked;
}

/** The answer of a call whose service answered but whose charge could not be recorded before the wait ran out (503, docs/api.md). */
export const CHARGE_PENDING_MESSAGE =
  'database unavailable; the service answered, and its charge is recorded or refunded once the database is back: ask again with the same Idempotency-Key to learn which';

/**
 * The 503 of a post that could not be recorded in time: the service answered,
 * the outcome is decided later (see {@link CHARGE_PENDING_MESSAGE}). `outcome`
 * is the post's result once the background recorded it (undefined: it did not;
 * the hold reaper refunds the hold), so that the call's answer can be stored
 * under its idempotency key then.
 */
export class ChargePendingError extends GatewayError {
  constructor(
    cause: unknown,
    readonly outcome: Promise<{ balance: bigint; posted: boolean } | undefined>,
  ) {
    super(
      'UNAVAILABLE',
      CHARGE_PENDING_MESSAGE,
      { dependency: 'database', retryAfterSeconds: DATABASE_RETRY_AFTER_S },
      { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
      { cause },
    );
  }
}
