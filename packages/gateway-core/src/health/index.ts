import type { schemas } from '@farebox/contract';
import { healthStatus, HEALTH_MIN_CALLS, type HealthStatus } from '@farebox/discovery';
import type { z } from 'zod';
import type { CallSummary } from '../call-types.js';
import type { Clock } from '../clock.js';
import type { Database } from '@farebox/ledger';
import { emitEvent } from '../webhooks/events.js';

/**
 * The health of each service as the gateway sees its paid calls (docs/api.md,
 * "Service health"): over the last hour, 24 hours and 7 days, the calls that
 * reached the service, the share it answered, the median and 95th percentile
 * of its answer time, the last failure. A call finished on this gateway is
 * counted in memory (no write on the call path) and added to the shared
 * table every `flushMs` (gw_service_health, schema 13: one upsert per flush,
 * every gateway into the same rows); the figures every listing shows are read
 * back from that table every `refreshMs`, so every gateway shows the same.
 * Not counted: calls by the service's own owner (nobody inflates their own
 * figures) and calls refused before they reached the service.
 */

/** Upper bounds of the answer-time histogram's buckets, ms (a last bucket holds everything slower). */
export const HEALTH_LATENCY_BOUNDS_MS = [
  5, 10, 20, 35, 50, 75, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10_000, 15_000, 20_000, 30_000, 60_000,
] as const;
const BUCKETS = HEALTH_LATENCY_BOUNDS_MS.length + 1;
/** A bucket of the table: 5 minutes. */
const BUCKET_SECONDS = 300;
const WINDOWS = { '1h': 3600, '24h': 86_400, '7d': 7 * 86_400 } as const;
type WindowName = keyof typeof WINDOWS;
/** Rows older than this are pruned (the longest window and a day). */
const KEEP_SECONDS = 8 * 86_400;

export type ServiceHealth = z.output<typeof schemas.ServiceHealth>;
export type HealthWindow = z.output<typeof schemas.HealthWindow>;
export type HealthPoint = z.output<typeof schemas.HealthPoint>;

interface Pending {
  calls: number;
  ok: number;
  latency: number[];
  lastFailure?: { reason: string; ms: number };
}

export interface ServiceHealthOptions {
  /** The gateway's database (its transactions carry a status change and its webhook event together). */
  db: Database;
  now: Clock;
  /** How often the counts of this gateway are added to the table and every gateway's read back (default 5 s). */
  flushMs?: number;
  log: (message: string, err?: unknown) => void;
  /** The owner's wallet of a service (the registry's): told of a status change by webhook (`service.health_changed`). */
  ownerOf?: (service: string) => string | undefined;
}

const bucketOf = (ms: number) => Math.floor(ms / 1000 / BUCKET_SECONDS);

function latencyBucket(ms: number): number {
  for (let i = 0; i < HEALTH_LATENCY_BOUNDS_MS.length; i++) if (ms <= HEALTH_LATENCY_BOUNDS_MS[i]!) return i;
  return HEALTH_LATENCY_BOUNDS_MS.length;
}

/** The `p` quantile of a histogram, interpolated inside its bucket (ms, whole). Null without calls. */
export function quantileOf(hist: readonly number[], p: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (total === 0) return null;
  const rank = p * total;
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    const n = hist[i]!;
    if (n === 0) continue;
    if (seen + n >= rank) {
      const lo = i === 0 ? 0 : HEALTH_LATENCY_BOUNDS_MS[i - 1]!;
      const hi = HEALTH_LATENCY_BOUNDS_MS[i] ?? HEALTH_LATENCY_BOUNDS_MS[HEALTH_LATENCY_BOUNDS_MS.length - 1]!;
      return Math.round(lo + (hi - lo) * Math.max(0, Math.min(1, (rank - seen) / n)));
    }
    seen += n;
  }
  return HEALTH_LATENCY_BOUNDS_MS[HEALTH_LATENCY_BOUNDS_MS.length - 1]!;
}

const windowView = (calls: number, ok: number, hist: readonly number[]): HealthWindow => ({
  calls,
  success_rate: calls === 0 ? null : Math.round((ok / calls) * 10_000) / 10_000,
  p50_ms: quantileOf(hist, 0.5),
  p95_ms: quantileOf(hist, 0.95),
});

/** A service nobody called yet (or whose calls are older than 7 days). */
export const NEW_SERVICE_HEALTH: ServiceHealth = {
  status: 'new',
  windows: { '1h': windowView(0, 0, []), '24h': windowView(0, 0, []), '7d': windowView(0, 0, []) },
  last_failure: null,
};

/** The health of a service from its window figures: the status judges the 24 hours, or the 7 days while they have too few calls. */
function healthOf(windows: Record<WindowName, HealthWindow>, lastFailure: ServiceHealth['last_failure']): ServiceHealth {
  const judged = windows['24h'].calls >= HEALTH_MIN_CALLS ? windows['24h'] : windows['7d'];
  const status: HealthStatus = healthStatus(judged.calls, judged.success_rate);
  return { status, windows, last_failure: lastFailure };
}

export function createServiceHealth(o: ServiceHealthOptions) {
  const { db, now, log } = o;
  const pending = new Map<string, Pending>();
  let snapshot = new Map<string, ServiceHealth>();
  let flushing: Promise<void> | undefined;
  let timers: NodeJS.Timeout[] = [];

  /** Adds this gateway's counts to the table: one statement for every service and bucket noted since the last flush. */
  async function flush(): Promise<void> {
    if (pending.size === 0) return;
    const rows = [...pending.entries()];
    pending.clear();
    const params: unknown[] = [];
    const values = rows.map(([key, p], i) => {
      const [service, bucket] = key.split('\u0000') as [string, string];
      params.push(service, bucket, p.calls, p.ok, p.latency, p.lastFailure?.reason ?? null, p.lastFailure?.ms ?? null);
      const b = i * 7;
      return `($${b + 1}, $${b + 2}::bigint, $${b + 3}::int, $${b + 4}::int, $${b + 5}::int[], $${b + 6}, $${b + 7}::bigint)`;
    });
    try {
      await db.query(
        `INSERT INTO gw_service_health (service, bucket, calls, ok, latency, last_failure, last_failure_ms) VALUES ${values.join(', ')}
         ON CONFLICT (service, bucket) DO UPDATE SET
           calls = gw_service_health.calls + EXCLUDED.calls,
           ok = gw_service_health.ok + EXCLUDED.ok,
           latency = ARRAY(SELECT a + b FROM unnest(gw_service_health.latency, EXCLUDED.latency) AS x(a, b)),
           last_failure = CASE WHEN EXCLUDED.last_failure_ms > COALESCE(gw_service_health.last_failure_ms, 0) THEN EXCLUDED.last_failure ELSE gw_service_health.last_failure END,
           last_failure_ms = GREATEST(gw_service_health.last_failure_ms, EXCLUDED.last_failure_ms)`,
        params,
      );
    } catch (err) {
      // Kept for the next flush (health figures, not money: at worst a few seconds late).
      for (const [key, p] of rows) merge(key, p);
      throw err;
    }
  }

  function merge(key: string, p: Pending): void {
    const into = pending.get(key);
    if (!into) return void pending.set(key, p);
    into.calls += p.calls;
    into.ok += p.ok;
    for (let i = 0; i < BUCKETS; i++) into.latency[i]! += p.latency[i]!;
    if (p.lastFailure && (!into.lastFailure || p.lastFailure.ms > into.lastFailure.ms)) into.lastFailure = p.lastFailure;
  }

  /** Reads every service's figures back from the table (all gateways' counts). */
  async function refresh(): Promise<void> {
    const at = Math.floor(now() / 1000);
    const since = (w: WindowName) => Math.floor((at - WINDOWS[w]) / BUCKET_SECONDS);
    const [totals, hists, failures] = await Promise.all([
      db.query<Record<string, string | number | null> & { service: string }>(
        `SELECT service,
                sum(calls) FILTER (WHERE bucket > $1) AS c1, sum(ok) FILTER (WHERE bucket > $1) AS o1,
                sum(calls) FILTER (WHERE bucket > $2) AS c24, sum(ok) FILTER (WHERE bucket > $2) AS o24,
                sum(calls) AS c7, sum(ok) AS o7
           FROM gw_service_health WHERE bucket > $3 GROUP BY service`,
        [since('1h'), since('24h'), since('7d')],
      ),
      db.query<{ service: string; i: string | number; h1: string | number | null; h24: string | number | null; h7: string | number }>(
        `SELECT service, u.i, sum(u.v) FILTER (WHERE bucket > $1) AS h1, sum(u.v) FILTER (WHERE bucket > $2) AS h24, sum(u.v) AS h7
           FROM gw_service_health, unnest(latency) WITH ORDINALITY AS u(v, i) WHERE bucket > $3 GROUP BY service, u.i`,
        [since('1h'), since('24h'), since('7d')],
      ),
      db.query<{ service: string; last_failure: string; last_failure_ms: string | number }>(
        `SELECT DISTINCT ON (service) service, last_failure, last_failure_ms FROM gw_service_health
          WHERE bucket > $1 AND last_failure_ms IS NOT NULL ORDER BY service, last_failure_ms DESC`,
        [since('7d')],
      ),
    ]);
    const histOf = new Map<string, Record<WindowName, number[]>>();
    for (const r of hists.rows) {
      let h = histOf.get(r.service);
      if (!h) histOf.set(r.service, (h = { '1h': new Array(BUCKETS).fill(0), '24h': new Array(BUCKETS).fill(0), '7d': new Array(BUCKETS).fill(0) }));
      const i = Number(r.i) - 1;
      h['1h'][i] = Number(r.h1 ?? 0);
      h['24h'][i] = Number(r.h24 ?? 0);
      h['7d'][i] = Number(r.h7 ?? 0);
    }
    const failureOf = new Map(failures.rows.map((r) => [r.service, { reason: r.last_failure, at: new Date(Number(r.last_failure_ms)).toISOString() }]));
    const next = new Map<string, ServiceHealth>();
    for (const r of totals.rows) {
      const h = histOf.get(r.service);
      const n = (v: string | number | null | undefined) => Number(v ?? 0);
      next.set(
        r.service,
        healthOf(
          {
            '1h': windowView(n(r.c1), n(r.o1), h?.['1h'] ?? []),
            '24h': windowView(n(r.c24), n(r.o24), h?.['24h'] ?? []),
            '7d': windowView(n(r.c7), n(r.o7), h?.['7d'] ?? []),
          },
          failureOf.get(r.service) ?? null,
        ),
      );
    }
    const before = snapshot;
    snapshot = next;
    // A status that moved since the last read: recorded once across gateways, with its webhook event (docs/webhooks.md).
    for (const [service, h] of next) {
      if ((before.get(service)?.status ?? 'unknown') !== h.status) await statusChanged(service, h);
    }
  }

  /** Stores the status of `service` and, when it differs from the stored one, writes `service.health_changed` in the same transaction. */
  async function statusChanged(service: string, h: ServiceHealth): Promise<void> {
    await db.transaction(async (tx) => {
      const { rows } = await tx.query<{ status: string }>('SELECT status FROM gw_service_status WHERE service = $1 FOR UPDATE', [service]);
      const from = rows[0]?.status ?? 'new';
      if (rows[0] && from === h.status) return;
      await tx.query(
        `INSERT INTO gw_service_status (service, status, changed_ms) VALUES ($1, $2, $3)
         ON CONFLICT (service) DO UPDATE SET status = EXCLUDED.status, changed_ms = EXCLUDED.changed_ms`,
        [service, h.status, now()],
      );
      const owner = o.ownerOf?.(service);
      if (from !== h.status && owner) await emitEvent(tx, { wallet: owner }, 'service.health_changed', { service, from, to: h.status, health: h }, { now });
    });
  }

  const tick = () => {
    flushing ??= flush()
      .then(refresh)
      .catch((err) => log('service health: counts not written or read yet (kept for the next try)', err))
      .finally(() => {
        flushing = undefined;
      });
    return flushing;
  };

  return {
    /**
     * Counts a finished call (the calls' `onFinished`): only one that reached the service (answered,
     * or failed and refunded), and not one made by the service's own owner.
     */
    note(c: CallSummary): void {
      if (c.ownCall || (c.outcome !== 'ok' && c.outcome !== 'refunded')) return;
      // Counted in place (no allocation per call but the key): the answer time is the call_service steps' (a repriced call has two).
      let ms = 0;
      let reached = false;
      for (const st of c.steps) {
        if (st.name !== 'call_service') continue;
        ms += st.durationMs;
        reached = true;
      }
      if (!reached && c.outcome !== 'ok') return;
      const at = now();
      const key = `${c.service}\u0000${bucketOf(at)}`;
      let p = pending.get(key);
      if (!p) pending.set(key, (p = { calls: 0, ok: 0, latency: new Array<number>(BUCKETS).fill(0) }));
      p.calls++;
      p.latency[latencyBucket(ms)]!++;
      if (c.outcome === 'ok') p.ok++;
      else if (!p.lastFailure || at >= p.lastFailure.ms) p.lastFailure = { reason: (c.error ?? `status ${c.status}`).slice(0, 300), ms: at };
    },
    /** The health of `service` as every gateway last counted it. */
    of(service: string): ServiceHealth {
      return snapshot.get(service) ?? NEW_SERVICE_HEALTH;
    },
    /** Every service's health (the stats feed of the discovery backend). */
    all(): ReadonlyMap<string, ServiceHealth> {
      return snapshot;
    },
    /** Calls, answered share and answer times of `service` per hour (24 h) or per 6 hours (7 d), oldest first, for a chart. */
    async series(service: string, window: '24h' | '7d'): Promise<HealthPoint[]> {
      const at = Math.floor(now() / 1000);
      const step = window === '24h' ? 3600 : 6 * 3600;
      const points = window === '24h' ? 24 : 28;
      const first = Math.floor(at / step) - points + 1;
      const { rows } = await db.query<{ slot: string | number; calls: string | number; ok: string | number }>(
        `SELECT floor(bucket * ${BUCKET_SECONDS} / $2::bigint) AS slot, sum(calls) AS calls, sum(ok) AS ok
           FROM gw_service_health WHERE service = $1 AND bucket >= $3 GROUP BY slot`,
        [service, step, Math.floor((first * step) / BUCKET_SECONDS)],
      );
      const { rows: hist } = await db.query<{ slot: string | number; i: string | number; v: string | number }>(
        `SELECT floor(bucket * ${BUCKET_SECONDS} / $2::bigint) AS slot, u.i, sum(u.v) AS v
           FROM gw_service_health, unnest(latency) WITH ORDINALITY AS u(v, i) WHERE service = $1 AND bucket >= $3 GROUP BY slot, u.i`,
        [service, step, Math.floor((first * step) / BUCKET_SECONDS)],
      );
      const hists = new Map<number, number[]>();
      for (const r of hist) {
        const slot = Number(r.slot);
        const h = hists.get(slot) ?? new Array<number>(BUCKETS).fill(0);
        h[Number(r.i) - 1] = Number(r.v);
        hists.set(slot, h);
      }
      const bySlot = new Map(rows.map((r) => [Number(r.slot), r]));
      return Array.from({ length: points }, (_, k) => {
        const slot = first + k;
        const r = bySlot.get(slot);
        return { at: new Date(slot * step * 1000).toISOString(), ...windowView(Number(r?.calls ?? 0), Number(r?.ok ?? 0), hists.get(slot) ?? []) };
      });
    },
    /** Writes what this gateway counted so far and reads every gateway's figures back (after a write already under way). */
    async sync(): Promise<void> {
      // A call's summary is reported just after its answer went out (setImmediate): let those come in first.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await flushing;
      await tick();
    },
    /** Drops rows older than 8 days. */
    async prune(): Promise<void> {
      await db.query('DELETE FROM gw_service_health WHERE bucket < $1', [bucketOf(now()) - KEEP_SECONDS / BUCKET_SECONDS]);
    },
    start(): void {
      if (timers.length) return;
      void tick();
      timers = [setInterval(() => void tick(), o.flushMs ?? 5_000), setInterval(() => void this.prune().catch(() => undefined), 3_600_000)];
      for (const t of timers) t.unref();
    },
    async close(): Promise<void> {
      for (const t of timers) clearInterval(t);
      timers = [];
      await flushing;
      await flush().catch((err) => log('service health: the last counts were not written', err));
    },
  };
}

export type ServiceHealthRecorder = ReturnType<typeof createServiceHealth>;
