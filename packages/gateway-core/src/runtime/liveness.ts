import { hostname } from 'node:os';
import type { DeadInstancesReaped, Ledger } from '@farebox/ledger';
import type { Logger } from '../observability/log.js';
import type { Metrics } from '../observability/metrics.js';

/**
 * Which gateways on the database are alive (ledger migration 0012, see
 * docs/operations.md "Gateways sharing a database"): this gateway joins as an
 * instance before it serves, beats every `intervalMs` by the database's
 * clock, and on each beat gives back what dead gateways held: the holds of a
 * gateway whose beats stopped for `timeoutMs` are voided (the reaper's void,
 * money back to credits) and its idempotency leases end, so a retry under
 * the same key runs at once. A gateway restarting after a crash gives back
 * its predecessor's at start (before the first call): on embedded PGlite,
 * the only process on its database, every other instance is dead; on
 * PostgreSQL, an instance of this host whose process no longer runs (or that
 * bears this process's name) once its beats stopped for three intervals
 * ({@link goneFromThisHost}), else at the first beat after that.
 */
export interface Liveness {
  /** This gateway's instance id now (a new one after it was declared dead). */
  instanceId(): string | null;
  /** One beat and one reap of dead gateways (by timeout only once this gateway beats steadily); resolves with what it gave back. */
  pass(): Promise<DeadInstancesReaped>;
  /** Stops the timer and leaves: what this gateway still holds goes back at any live gateway's next pass. */
  stop(): Promise<void>;
}

export interface LivenessOptions {
  ledger: Ledger;
  intervalMs: number;
  timeoutMs: number;
  /** This process alone opens the database (embedded PGlite). */
  sole: boolean;
  logger: Logger;
  metrics: Metrics;
  log: (message: string, err?: unknown) => void;
}

/** Whether process `pid` runs on this host (EPERM: it runs under another user). */
function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the instance named `name` (`<host> pid <pid>`) is known to be gone:
 * it ran on this host and its process no longer runs, or it bears this
 * process's own name (a restarted container keeps its host name and often its
 * pid). Asked only of instances whose beats stopped for a few intervals, so a
 * live gateway elsewhere under the same host name is not taken for one.
 */
export function goneFromThisHost(name: string, host = hostname(), pid = process.pid, runs: (pid: number) => boolean = processRuns): boolean {
  const m = /^(.*) pid (\d+)$/.exec(name);
  if (!m || m[1] !== host) return false;
  const other = Number(m[2]);
  return other === pid || !runs(other);
}

export async function startLiveness(o: LivenessOptions): Promise<Liveness> {
  const { ledger, logger, metrics, timeoutMs } = o;
  const name = `${hostname()} pid ${process.pid}`;
  // A predecessor on this host (a crash, then a restart) is given back at start once its beats stopped for three beats.
  const gone = { gone: ({ name: other }: { name: string }) => goneFromThisHost(other), goneAfterMs: Math.min(timeoutMs, 3 * o.intervalMs) };
  await ledger.joinInstance(name);
  const report = (r: DeadInstancesReaped) => {
    if (!r.instances.length) return r;
    if (r.voided.length) metrics.reaperVoided.inc(r.voided.length);
    logger.warn(
      { event: 'liveness', instances: r.instances, voided: r.voided.length, holds: r.voided.slice(0, 20), leasesReleased: r.released },
      'gave back the holds and idempotency leases of a gateway that stopped',
    );
    return r;
  };
  // What a gateway that left or died before this one started still holds: on PGlite every other instance at once.
  report(await ledger.reapDeadInstances({ timeoutMs, sole: o.sole, ...gone }));

  let failing = false;
  const pass = async (): Promise<DeadInstancesReaped> => {
    const beat = await ledger.beatInstance(timeoutMs, name);
    if (beat.rejoined) {
      logger.warn(
        { event: 'liveness', instance: beat.instanceId },
        `this gateway's beats stopped for ${timeoutMs} ms and another gateway declared it dead: the calls it had in flight were refunded; it goes on as instance ${beat.instanceId}`,
      );
    }
    // Before its own beats are steady (after a database outage every beat is old) only the gone are declared dead.
    return report(await ledger.reapDeadInstances({ timeoutMs, ...gone }));
  };
  let running: Promise<unknown> | undefined;
  const timer = setInterval(() => {
    if (running) return;
    running = pass()
      .then(
        () => {
          failing = false;
        },
        (err: unknown) => {
          // Once per run of failures (the database is away; its own checks say so).
          if (!failing) o.log('liveness beat failed', err);
          failing = true;
        },
      )
      .finally(() => {
        running = undefined;
      });
  }, o.intervalMs);
  timer.unref();

  return {
    instanceId: () => ledger.instanceId,
    pass,
    async stop() {
      clearInterval(timer);
      await running;
      await ledger.leaveInstance().catch((err: unknown) => o.log('leaving the gateways on the database failed', err));
    },
  };
}
