import type { Database } from './db.js';
import { invalid, positiveInt, str, text } from './rows.js';

// Which processes on the database are alive (migration 0012): each process
// that places holds joins `ledger_instances` and beats there; its holds and
// idempotency leases carry its instance id. A live instance marks the ones
// whose beats stopped as dead and gives back what they held.

/** What one pass of {@link reapDeadInstances} gave back. */
export interface DeadInstancesReaped {
  /** Dead instances whose holds and leases this pass gave back (their rows are gone). */
  instances: string[];
  /** Holds of those instances this pass voided (the reaper's void: the money is back in credits). */
  voided: string[];
  /** Idempotency leases of those instances this pass ended (a retry with the key runs at once). */
  released: number;
}

const interval = (param: string) => `make_interval(secs => ${param}::float8 / 1000)`;

/** Adds an instance row; its id goes on every hold and lease this process makes. */
export async function joinInstance(db: Database, name: string): Promise<string> {
  const { rows } = await db.query('INSERT INTO ledger_instances (name) VALUES ($1) RETURNING id', [text(name, 'name', 200)]);
  return str(rows[0]?.id);
}

/**
 * One beat of `id`, by the database's clock. `alive: false` when the
 * instance was declared dead (or its row is gone): it must join again.
 * `steady`: its beats have not missed `timeoutMs` for at least `timeoutMs`.
 */
export async function beat(db: Database, id: string, timeoutMs: number): Promise<{ alive: boolean; steady: boolean }> {
  const { rows } = await db.query(
    `UPDATE ledger_instances
        SET alive_since = CASE WHEN beat_at < now() - ${interval('$2')} THEN now() ELSE alive_since END,
            beat_at = now()
      WHERE id = $1 AND dead_at IS NULL
      RETURNING alive_since <= now() - ${interval('$2')} AS steady`,
    [id, timeoutMs],
  );
  const row = rows[0];
  return { alive: row !== undefined, steady: row?.steady === true };
}

/** Marks the instance dead (a process that stops): what it still holds is given back by the next reap. */
export async function leaveInstance(db: Database, id: string): Promise<void> {
  await db.query('UPDATE ledger_instances SET dead_at = now() WHERE id = $1 AND dead_at IS NULL', [id]);
}

export interface ReapDeadOptions {
  /** An instance whose last beat is older than this is dead. */
  timeoutMs: number;
  /**
   * This process is the only one on the database (embedded PGlite, which one
   * process opens at a time): every other instance is dead now.
   */
  sole?: boolean;
  /** Holds voided per query (default 1,000; the pass goes on until none is left). */
  limit?: number;
  /**
   * Tells, for another instance whose last beat is older than `goneAfterMs`,
   * that its process is known to be gone (the gateway: one on this host whose
   * process id no longer runs, or a previous run under this very process's
   * name): it is dead now, without waiting for `timeoutMs` or for this
   * instance's steady run. So a process restarting after a crash gives back
   * what its predecessor held at start.
   */
  gone?: (instance: { id: string; name: string }) => boolean;
  /** How long the beats of an instance that `gone` may declare dead must have stopped (ms; default `timeoutMs`). */
  goneAfterMs?: number;
}

/**
 * Marks the instances that stopped beating as dead (only while `self` beats
 * steadily), then, for each dead instance, voids its pending holds with
 * `voidHold` (the reaper's at-most-once void), ends its idempotency leases
 * and drops its row. A lease is kept, to end by its own time, when the
 * account has a wallet payment still pending that was recorded since the key
 * was first claimed (its on-chain outcome is not known yet: a retry of a call
 * would pay again), unless the lease is a top-up's own (`topup:<key>`, whose
 * payment `topup:key:<key>` exists): a retry finishes that same payment.
 */
export async function reapDeadInstances(
  db: Database,
  self: string,
  options: ReapDeadOptions,
  voidHold: (holdId: string) => Promise<boolean>,
): Promise<DeadInstancesReaped> {
  const timeoutMs = positiveInt(options?.timeoutMs, 'timeoutMs', 86_400_000);
  const limit = options.limit === undefined ? 1000 : positiveInt(options.limit, 'limit', 100_000);
  if (options.sole !== undefined && typeof options.sole !== 'boolean') invalid('sole must be a boolean', { field: 'sole' });
  if (options.gone !== undefined && typeof options.gone !== 'function') invalid('gone must be a function', { field: 'gone' });
  const goneAfterMs = options.goneAfterMs === undefined ? timeoutMs : positiveInt(options.goneAfterMs, 'goneAfterMs', 86_400_000);
  if (options.gone) {
    const { rows } = await db.query(`SELECT id, name FROM ledger_instances WHERE dead_at IS NULL AND id <> $1 AND beat_at < now() - ${interval('$2')}`, [
      self,
      goneAfterMs,
    ]);
    const gone = rows.map((r) => ({ id: str(r.id), name: str(r.name) })).filter((r) => options.gone!(r));
    // The beat is asked again: an instance that beat meanwhile is alive.
    if (gone.length > 0)
      await db.query(`UPDATE ledger_instances SET dead_at = now() WHERE id = ANY($1::bigint[]) AND dead_at IS NULL AND beat_at < now() - ${interval('$2')}`, [
        gone.map((r) => r.id),
        goneAfterMs,
      ]);
  }
  await db.query(
    `UPDATE ledger_instances o SET dead_at = now()
      WHERE o.dead_at IS NULL AND o.id <> $1
        AND ($3::boolean OR (o.beat_at < now() - ${interval('$2')} AND EXISTS (
              SELECT 1 FROM ledger_instances me
               WHERE me.id = $1 AND me.dead_at IS NULL AND me.alive_since <= now() - ${interval('$2')})))`,
    [self, timeoutMs, options.sole === true],
  );
  const { rows: dead } = await db.query('SELECT id FROM ledger_instances WHERE dead_at IS NOT NULL AND id <> $1 ORDER BY id', [self]);
  const result: DeadInstancesReaped = { instances: [], voided: [], released: 0 };
  for (const { id } of dead) {
    const instance = str(id);
    for (;;) {
      const { rows } = await db.query(`SELECT id FROM holds WHERE state = 'pending' AND instance_id = $1 ORDER BY created_at LIMIT $2`, [instance, limit]);
      for (const row of rows) if (await voidHold(str(row.id))) result.voided.push(str(row.id));
      if (rows.length < limit) break;
    }
    const released = await db.query(
      `UPDATE idempotency_keys k SET locked_until = now()
        WHERE k.state = 'in_progress' AND k.instance_id = $1 AND k.locked_until > now()
          AND (NOT EXISTS (
                 SELECT 1 FROM wallet_payments w
                  WHERE w.account_id = k.account_id AND w.state = 'pending' AND w.created_at >= k.created_at)
               OR (k.key LIKE 'topup:%' AND EXISTS (
                 SELECT 1 FROM wallet_payments t
                  WHERE t.account_id = k.account_id AND t.kind = 'topup' AND t.call_id = 'topup:key:' || substr(k.key, 7))))`,
      [instance],
    );
    result.released += released.rowCount ?? 0;
    await db.query('DELETE FROM ledger_instances WHERE id = $1 AND dead_at IS NOT NULL', [instance]);
    result.instances.push(instance);
  }
  return result;
}
