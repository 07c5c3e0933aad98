import type { Clock } from '../clock.js';
import { reasonOf, type DependencyName } from '../observability/dependencies.js';
import type { DependencyReport, PlatformServiceDeps, Readiness } from './platform.js';

/** How long each probe may take. */
const PROBE_MS = 2_000;
/** Horizon is asked at most this often (by the gateway's clock): a balance read, not free on a public Horizon. */
const HORIZON_PROBE_MS = 10_000;

/** What callers notice while a dependency is down (the readiness body's `effect`; docs/operations.md "Health"). */
export function dependencyEffect(name: DependencyName): string {
  switch (name) {
    case 'database':
      return 'every route answers 503 "database unavailable" with Retry-After; nothing is charged';
    case 'redis':
      return 'rate limits are not enforced (requests pass unlimited); the credential cache is off, so every request reads its credential from the database (revocations still apply at once)';
    case 'rpc':
      return 'the catalog stops following the registry; wallet payments, paid top-ups and settlement wait and are retried; calls paid with credits go on';
    case 'horizon':
      return 'wallet balances, wallet set-up, paid top-ups and the wallet-credit audit wait and are retried; calls paid with credits go on';
    case 'catalog':
      return 'services registered or changed since the last sync are not seen here (unknown ones answer 404); calls to known services go on';
    case 'discovery':
      return 'search (GET /v1/agents?q=, the MCP search) answers 500; listing and calls go on';
    case 'model':
      return 'search is keyword-only (no semantic ranking)';
    case 'escrow':
      return 'settlement cycles and wallet payments through escrow wait and are retried; calls paid with credits go on';
  }
}

const horizonProbes = new WeakMap<PlatformServiceDeps, { at: number; done: Promise<unknown> }>();

/**
 * Asks each dependency (each probe waits at most 2 s), reports what it found
 * to the dependency tracker (one log line per change), and builds
 * `GET /health/ready`'s answer from the tracker's view.
 */
export async function readiness(d: PlatformServiceDeps, now: Clock): Promise<Readiness> {
  const deps = d.dependencies;
  const checks: Record<string, string> = {};
  const probe = async (name: DependencyName, fn: () => Promise<string>) => {
    try {
      checks[name] = await withTimeout(fn(), PROBE_MS, name);
      deps.up(name);
    } catch (err) {
      checks[name] = 'down';
      deps.down(name, reasonOf(err));
    }
  };
  const { db, redis, mirror } = d;
  await Promise.all([
    probe('database', async () => {
      await db.query('SELECT 1');
      return 'ok';
    }),
    ...(redis
      ? [
          probe('redis', async () => {
            if (redis.status !== 'ready') throw new Error(`connection ${redis.status}`);
            await redis.ping();
            return 'ok';
          }),
        ]
      : []),
    probe('rpc', async () => `ledger ${await d.networkLedger()}`),
    probe('horizon', async () => {
      let p = horizonProbes.get(d);
      if (!p || now() - p.at > HORIZON_PROBE_MS) {
        // An account Horizon does not know is an answer too (the treasury before its funding).
        p = { at: now(), done: d.chain.balances(d.treasuryAddress) };
        p.done.catch(() => horizonProbes.delete(d));
        horizonProbes.set(d, p);
      }
      await p.done;
      return 'ok';
    }),
    ...(d.searchBackend.probe
      ? [
          probe('discovery', async () => {
            await d.searchBackend.probe!();
            const s = d.searchBackend.status();
            if ('lastError' in s && s.lastError && deps.state('discovery') === 'down') throw new Error(s.lastError);
            return 'ok';
          }),
        ]
      : []),
  ]);

  // The catalog: read from the mirror's state, never synced or stale is down.
  const m = mirror.status();
  let catalogDown: string | undefined;
  if (m.lastSyncAt === null) catalogDown = `not synced yet${m.lastError ? ` (${m.lastError})` : ''}`;
  else if (now() - m.lastSyncAt > d.catalogStaleMs)
    catalogDown = `last synced ${Math.round((now() - m.lastSyncAt) / 1000)} s ago${m.lastError ? ` (${m.lastError})` : ''}`;
  if (catalogDown) {
    checks.catalog = 'down';
    deps.down('catalog', catalogDown);
  } else {
    checks.catalog = m.syncedLedger === null ? 'ok' : `ledger ${m.syncedLedger}`;
    deps.up('catalog');
  }
  // The model, when one is configured for the in-process index: keyword-only means it is not in use.
  if (d.modelConfigured && d.searchBackend.kind === 'local') {
    const s = d.searchIndex.status();
    if (s.mode === 'hybrid') {
      checks.model = 'ok';
      deps.up('model');
    } else {
      checks.model = 'down';
      // A model never loaded is the search index's own news: it logged one line saying search is
      // keyword-only and how to get the model (or its download's progress). A model lost after
      // serving hybrid is warned here.
      deps.down('model', s.reason ?? 'keyword-only', { quiet: deps.state('model') !== 'up' });
    }
  }

  const required = new Set<DependencyName>(['database', ...d.readyRequires]);
  // A gateway that never read the registry knows no service: every call would answer 404.
  if (m.lastSyncAt === null) required.add('catalog');
  const dependencies: Readiness['dependencies'] = {};
  const reasons: string[] = [];
  let degraded = false;
  for (const [name, status] of Object.entries(deps.snapshot()) as Array<[DependencyName, NonNullable<ReturnType<typeof deps.snapshot>[DependencyName]>]>) {
    const report: DependencyReport = { state: status.state, required: required.has(name), since: status.since };
    if (status.state === 'down') {
      report.reason = status.reason ?? 'down';
      report.effect = dependencyEffect(name);
      if (report.required) reasons.push(`${name}: ${report.reason}`);
      else degraded = true;
    }
    if (!(name in checks)) checks[name] = status.state === 'up' ? 'ok' : status.state;
    dependencies[name] = report;
  }
  const ready = reasons.length === 0;
  return { ready, status: !ready ? 'down' : degraded ? 'degraded' : 'ok', reasons, checks, dependencies };
}

/** Rejects when `p` takes longer than `ms`. */
export const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
};
