import { createHash } from 'node:crypto';
import type { Database } from '@farebox/ledger';
import { systemClock, type Clock } from '../clock.js';

/** Serialises async work per key inside one process. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` after every earlier holder of `key` finished. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const result = prev.then(fn, fn);
    const tail = result.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** True while someone holds or waits for `key`. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }
}

/** The two int4 keys of the PostgreSQL advisory lock `name` in this database's schema (`farebox:<schema>:<name>`). */
export function advisoryKeys(db: Pick<Database, 'schema'>, name: string): [number, number] {
  const h = createHash('sha256')
    .update(`farebox:${db.schema ?? 'public'}:${name}`)
    .digest();
  return [h.readInt32BE(0), h.readInt32BE(4)];
}

/**
 * A per-cycle lock that also holds across processes on PostgreSQL:
 * `pg_try_advisory_lock` on a dedicated pooled client (the lock belongs to
 * that session and dies with it if the process is killed). PGlite is one
 * process by construction (its lock file), so the in-process mutex is enough.
 */
/** `now`: the gateway's clock, which a lock's wait (`waitMs`) is measured by. */
export function createCycleLocks(db: Database, now: Clock = systemClock) {
  const local = new KeyedMutex();
  const keys = (name: string) => advisoryKeys(db, name);

  /**
   * Runs `fn` holding the lock `name`, or returns `undefined` without running
   * it when another process holds it (`wait: false`, the default for ticks);
   * with `waitMs`, retries until then.
   */
  async function withLock<T>(name: string, fn: () => Promise<T>, opts: { waitMs?: number } = {}): Promise<{ ran: true; value: T } | { ran: false }> {
    if (!opts.waitMs && local.busy(name)) return { ran: false };
    return local.run(name, async () => {
      if (db.kind !== 'postgres') return { ran: true as const, value: await fn() };
      const [a, b] = keys(name);
      const client = await db.pool.connect();
      let locked = false;
      try {
        const deadline = now() + (opts.waitMs ?? 0);
        for (;;) {
          const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, $2) AS ok', [a, b]);
          locked = rows[0]?.ok === true;
          if (locked || now() >= deadline) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        if (!locked) return { ran: false as const };
        return { ran: true as const, value: await fn() };
      } finally {
        if (locked) await client.query('SELECT pg_advisory_unlock($1, $2)', [a, b]).catch(() => undefined);
        client.release();
      }
    });
  }

  return { withLock };
}

export type CycleLocks = ReturnType<typeof createCycleLocks>;
