import { createHash } from 'node:crypto';
import { leadOf, systemClock, type Clock } from './clock.js';
import { ASYNC_COMMIT_CONDITION, type Database } from './db.js';
import { LedgerError } from './errors.js';
import { positiveInt, sleep, str, text } from './rows.js';
import type { IdempotencyClaim, IdempotencyOptions, IdempotentResult } from './types.js';

// Stripe-style idempotency keys over the idempotency_keys table.

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'bigint') return JSON.stringify(value.toString());
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/**
 * SHA-256 (hex) of a request in canonical JSON (keys sorted), the
 * `requestHash` of {@link Ledger.withIdempotency}: two bodies with the same
 * content in another key order hash the same.
 */
export function hashRequest(request: unknown): string {
  return createHash('sha256').update(canonicalJson(request)).digest('hex');
}

// `owned`: the lease records the ledger's instance ($5, migration 0012); a
// ledger that joined none sends the statement without it. A lease is stamped
// and compared by the database's time moved by the host clock's lead
// (clock.ts): $4 is the lease plus that lead.
const claimSql = (commit: string, owned: boolean) => `
INSERT INTO idempotency_keys (account_id, key, request_hash, state, locked_until${owned ? ', instance_id' : ''})
SELECT $1, $2, $3, 'in_progress', now() + make_interval(secs => $4::float8 / 1000)${owned ? ', $5::int8' : ''}${commit}
ON CONFLICT (account_id, key) DO NOTHING RETURNING attempt`;
/** [without, with] the instance. */
const CLAIM_SQL = [claimSql('', false), claimSql('', true)] as const;
/**
 * On a PostgreSQL server the claim commits without waiting for its WAL flush
 * (its own transaction only), as a hold does: nothing is answered before the
 * completion's durable commit, and PostgreSQL flushes the log in order, so
 * that commit (or any durable one the operation makes) flushes the claim
 * first. A claim lost with a server crash leaves nothing done under it that
 * was not lost too; the retry claims the key anew.
 */
const CLAIM_SQL_ASYNC = [claimSql(`\nWHERE ${ASYNC_COMMIT_CONDITION}`, false), claimSql(`\nWHERE ${ASYNC_COMMIT_CONDITION}`, true)] as const;

// An attempt's end: its response stored, or its claim released (a retry runs anew). Both touch this attempt's claim only.
const COMPLETE_SQL = `UPDATE idempotency_keys SET state = 'completed', response = $4, completed_at = now()
       WHERE account_id = $1 AND key = $2 AND state = 'in_progress' AND attempt = $3`;
const RELEASE_SQL = `DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'in_progress' AND attempt = $3`;

/**
 * The end of an attempt that could not be written when `fn` ended: an
 * outcome that `fn` said comes later ({@link IdempotencyClaim}), stored under
 * the claim when it resolves, or a release the database did not take (it was
 * gone). The database has usually just come back then; a statement that
 * still fails is asked again each second for `leaseMs` (by the host's
 * clock), after which the lease would have ended the claim anyway.
 */
async function settleLater<T>(
  db: Database,
  accountId: string,
  key: string,
  attempt: number,
  outcome: Promise<T | undefined>,
  leaseMs: number,
  now: Clock,
): Promise<void> {
  const response = await outcome.catch(() => undefined);
  const until = now() + leaseMs;
  for (;;) {
    try {
      if (response === undefined) await db.query(RELEASE_SQL, [accountId, key, attempt]);
      else await db.query(COMPLETE_SQL, [accountId, key, attempt, JSON.stringify(response) ?? 'null']);
      return;
    } catch {
      if (now() >= until) return;
      await new Promise((r) => setTimeout(r, 1_000).unref());
    }
  }
}

export async function withIdempotency<T>(
  db: Database,
  accountId: string,
  key: string,
  requestHash: string,
  fn: (claim: IdempotencyClaim<T>) => Promise<T>,
  options: IdempotencyOptions = {},
  instance: string | null = null,
  now: Clock = systemClock,
): Promise<IdempotentResult<T>> {
  text(accountId, 'accountId', 128);
  text(key, 'idempotency key', 255);
  text(requestHash, 'requestHash', 256);
  const leaseMs = options.leaseMs === undefined ? 60_000 : positiveInt(options.leaseMs, 'leaseMs', 86_400_000);
  const waitMs = options.waitMs ?? 0;
  const started = now();
  const ahead = leadOf(now);
  for (;;) {
    const lead = ahead();
    const lease = leaseMs + lead;
    const claim = (db.kind === 'postgres' ? CLAIM_SQL_ASYNC : CLAIM_SQL)[instance === null ? 0 : 1];
    const inserted = await db.query(claim, instance === null ? [accountId, key, requestHash, lease] : [accountId, key, requestHash, lease, instance]);
    let attempt: number | undefined = inserted.rows[0] ? Number(inserted.rows[0].attempt) : undefined;
    if (attempt === undefined) {
      const { rows } = await db.query(
        `SELECT request_hash, state, response, ceil(extract(epoch FROM locked_until - now()) - $3::float8 / 1000)::int8 AS lease_left
           FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
        [accountId, key, lead],
      );
      const row = rows[0];
      if (!row) continue; // released by a failed attempt in between: try again
      if (row.request_hash !== requestHash) {
        throw new LedgerError('IDEMPOTENCY_MISMATCH', 'idempotency key reused with a different request', { key });
      }
      if (row.state === 'completed') return { response: JSON.parse(str(row.response)) as T, replayed: true };
      const takeover = await db.query(
        `UPDATE idempotency_keys SET attempt = attempt + 1, locked_until = now() + make_interval(secs => $3::float8 / 1000)${instance === null ? '' : ', instance_id = $5::int8'}
         WHERE account_id = $1 AND key = $2 AND state = 'in_progress' AND locked_until < now() + make_interval(secs => $4::float8 / 1000) RETURNING attempt`,
        instance === null ? [accountId, key, lease, lead] : [accountId, key, lease, lead, instance],
      );
      attempt = takeover.rows[0] ? Number(takeover.rows[0].attempt) : undefined;
      if (attempt === undefined) {
        if (now() - started < waitMs) {
          await sleep(Math.min(25, waitMs));
          continue;
        }
        // The seconds until the lease ends (at least 1): when a retry can take the key over.
        const retryAfterSeconds = Math.max(1, Number(row.lease_left ?? 1));
        throw new LedgerError('IDEMPOTENCY_IN_PROGRESS', 'a request with this idempotency key is still in progress', { key, retryAfterSeconds });
      }
    }
    let response: T;
    let later: Promise<T | undefined> | undefined;
    try {
      response = await fn({ later: (outcome) => void (later = outcome) });
    } catch (error) {
      if (later !== undefined) void settleLater(db, accountId, key, attempt, later, leaseMs, now);
      // A release the database does not take (it is gone) is asked again in the background, so a retry need not wait
      // out the lease once the database is back; the caller learns fn's error, not the release's.
      else
        await db
          .query(RELEASE_SQL, [accountId, key, attempt])
          .catch(() => void settleLater(db, accountId, key, attempt, Promise.resolve(undefined), leaseMs, now));
      throw error;
    }
    const stored = JSON.stringify(response) ?? 'null';
    let done: { rowCount: number | null };
    try {
      done = await db.query(COMPLETE_SQL, [accountId, key, attempt, stored]);
    } catch {
      // fn ran (a call was charged): its response is the caller's even when the database went away before it was
      // stored. It is stored once the database takes it; a retry meanwhile is told the key is still in progress.
      void settleLater(db, accountId, key, attempt, Promise.resolve(response), leaseMs, now);
      return { response, replayed: false };
    }
    if (done.rowCount === 0) {
      // Our lease ran out and another attempt finished first: its response is the one on record.
      const { rows } = await db.query(`SELECT response FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND state = 'completed'`, [accountId, key]);
      if (rows[0]) return { response: JSON.parse(str(rows[0].response)) as T, replayed: true };
    }
    return { response, replayed: false };
  }
}
