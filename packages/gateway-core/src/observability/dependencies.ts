import type { Clock } from '../clock.js';
import { systemClock } from '../clock.js';
import { isoTime } from './iso-time.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';

/** What a gateway depends on, as `/health/ready`, the logs and the metrics name them. */
export const DEPENDENCIES = ['database', 'redis', 'rpc', 'horizon', 'catalog', 'discovery', 'model', 'escrow'] as const;
export type DependencyName = (typeof DEPENDENCIES)[number];

/** `unknown` until the first answer (or failure) is seen. */
export type DependencyState = 'up' | 'down' | 'unknown';

export interface DependencyStatus {
  state: DependencyState;
  /** When the state last changed (ISO), null while unknown. */
  since: string | null;
  /** Why it is down (the last failure seen). */
  reason?: string;
}

/**
 * One gateway's view of its dependencies, fed by the clients that use them
 * (the database pool's statements, Redis's connection events, RPC and
 * Horizon calls, the discovery backend, the escrow provider) and by the
 * readiness probes. Each change of state writes one log line (`warn` when a
 * dependency goes down, `info` when it is back: never one per request) and
 * moves `farebox_dependency_up{dependency}` and
 * `farebox_dependency_transitions_total{dependency,to}`.
 *
 * @example
 * const deps = createDependencyTracker({ logger, metrics });
 * deps.watch('redis');
 * redis.on('ready', () => deps.up('redis'));
 * redis.on('close', () => deps.down('redis', 'connection closed'));
 */
export interface DependencyTracker {
  /** Declares a dependency this gateway has (its gauge and readiness entry appear, state `unknown`). */
  watch(name: DependencyName): void;
  /** An answer came back: the dependency is usable. Cheap when it already was (hot paths call it). */
  up(name: DependencyName): void;
  /**
   * A connection-level failure: the dependency is not usable. `quiet` moves the
   * state and the metrics without the warn line (nor the info line when it is
   * back), for a dependency whose own module says so in its words (the search
   * model, never loaded: the index logs keyword-only, progress, hybrid now).
   */
  down(name: DependencyName, reason: string, options?: { quiet?: boolean }): void;
  /** The dependencies declared so far, with their state. */
  snapshot(): Partial<Record<DependencyName, DependencyStatus>>;
  state(name: DependencyName): DependencyState | undefined;
  /** Stops logging and counting (the gateway is closing: its own disconnects are no news). */
  stop(): void;
}

export interface DependencyTrackerOptions {
  logger: Logger;
  metrics?: Pick<Metrics, 'dependencyUp' | 'dependencyTransitions'>;
  now?: Clock;
}

interface Entry {
  state: DependencyState;
  since: number | null;
  reason: string | undefined;
  /** Went down quietly: its return is the owning module's news too. */
  quiet?: boolean;
}

export function createDependencyTracker(options: DependencyTrackerOptions): DependencyTracker {
  const { logger, metrics } = options;
  const now = options.now ?? systemClock;
  const entries = new Map<DependencyName, Entry>();
  let stopped = false;
  const entry = (name: DependencyName): Entry => {
    let e = entries.get(name);
    if (!e) {
      e = { state: 'unknown', since: null, reason: undefined };
      entries.set(name, e);
    }
    return e;
  };
  return {
    watch(name) {
      entry(name);
    },
    up(name) {
      const e = entries.get(name);
      if (e?.state === 'up' || stopped) return;
      const was = entry(name);
      const previous = was.state;
      const downFor = was.since === null ? 0 : now() - was.since;
      was.state = 'up';
      was.since = now();
      was.reason = undefined;
      const quiet = was.quiet === true;
      was.quiet = false;
      metrics?.dependencyUp.set({ dependency: name }, 1);
      // The first answer at start is no news; coming back after a failure is.
      if (previous !== 'down') return;
      metrics?.dependencyTransitions.inc({ dependency: name, to: 'up' });
      if (quiet) return;
      logger.info({ event: 'dependency', dependency: name, state: 'up', downMs: downFor }, `${name} is back (down ${(downFor / 1000).toFixed(1)} s)`);
    },
    down(name, reason, options) {
      const e = entry(name);
      if (e.state === 'down' || stopped) return;
      e.state = 'down';
      e.since = now();
      e.reason = reason;
      e.quiet = options?.quiet === true;
      metrics?.dependencyUp.set({ dependency: name }, 0);
      metrics?.dependencyTransitions.inc({ dependency: name, to: 'down' });
      if (e.quiet) return;
      logger.warn({ event: 'dependency', dependency: name, state: 'down', reason }, `${name} is down: ${reason}`);
    },
    snapshot() {
      const out: Partial<Record<DependencyName, DependencyStatus>> = {};
      for (const name of DEPENDENCIES) {
        const e = entries.get(name);
        if (!e) continue;
        out[name] = { state: e.state, since: e.since === null ? null : isoTime(e.since), ...(e.reason !== undefined ? { reason: e.reason } : {}) };
      }
      return out;
    },
    state(name) {
      return entries.get(name)?.state;
    },
    stop() {
      stopped = true;
    },
  };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'NETWORK',
]);

/**
 * Whether `err` (or an error it wraps, through `cause`) says the other side
 * could not be reached or did not answer: a refused or reset connection, a
 * timeout, a failed DNS look-up, `fetch failed`, an HTTP 502/503/504. An
 * answer that refuses the request (a 400, a 404) is not one: the dependency is up.
 */
export function isUnreachable(err: unknown): boolean {
  const seen: unknown[] = [err];
  for (let i = 0; i < seen.length && i < 8; i++) {
    const e = seen[i];
    if (!e || typeof e !== 'object') continue;
    const x = e as {
      code?: unknown;
      name?: unknown;
      message?: unknown;
      status?: unknown;
      cause?: unknown;
      response?: { status?: unknown };
      data?: { status?: unknown; cause?: unknown };
    };
    if (typeof x.code === 'string' && NETWORK_CODES.has(x.code)) return true;
    if (x.name === 'AbortError' || x.name === 'TimeoutError') return true;
    if (typeof x.message === 'string' && UNREACHABLE_MESSAGE.test(x.message)) return true;
    const status = typeof x.status === 'number' ? x.status : typeof x.response?.status === 'number' ? x.response.status : x.data?.status;
    if (status === 502 || status === 503 || status === 504) return true;
    // Errors wrap their cause as `cause`, or (StellarError) in `data.cause`.
    seen.push(x.cause, x.data?.cause);
  }
  return false;
}

/** Messages of a transport failure that lost its code on the way (a wrapped axios or fetch error). */
const UNREACHABLE_MESSAGE =
  /\b(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN)\b|fetch failed|socket hang up|Network Error|did not answer within|timeout of \d+ms exceeded/i;

/** The first line of an error's message, at most 200 characters (for a log line and the readiness body). */
export function reasonOf(err: unknown): string {
  const text = err instanceof Error ? err.message || err.name : String(err);
  return (text.split('\n')[0] ?? '').slice(0, 200);
}

/**
 * `target` with each of its methods that returns a promise reporting the
 * outcome to `deps`: an answer (even a refusal such as a 404) marks `name`
 * up, an unreachable server ({@link isUnreachable}) marks it down. The
 * answers and errors pass through unchanged.
 */
export function trackCalls<T extends object>(target: T, name: DependencyName, deps: DependencyTracker): T {
  deps.watch(name);
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(t, key, receiver) {
      const value = Reflect.get(t, key, receiver);
      if (typeof value !== 'function') return value;
      let w = wrapped.get(key);
      if (!w) {
        w = function (this: unknown, ...args: unknown[]) {
          const out = (value as (...a: unknown[]) => unknown).apply(this === receiver ? t : this, args);
          if (out instanceof Promise) {
            out.then(
              () => deps.up(name),
              (err: unknown) => (isUnreachable(err) ? deps.down(name, reasonOf(err)) : deps.up(name)),
            );
          }
          return out;
        };
        wrapped.set(key, w);
      }
      return w;
    },
  });
}
