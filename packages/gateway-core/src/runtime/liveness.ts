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
 * the same key runs at once. On embedded PGlite this gateway is the only
 * process on its database: every other instance (its own before a crash) is
 * dead at start, and is reaped before the first call.
 */
export interface Liveness {
  /** This gateway's instance id now (a new one after it was declared dead). */
  instanceId(): string | null;
  /** One beat and, when this gateway beats steadily, one reap of dead gateways; resolves with what it gave back. */
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

const NOTHING: DeadInstancesReaped = { instances: [], voided: [], released: 0 };

export async function startLiveness(o: LivenessOptions): Promise<Liveness> {
  const { ledger, logger, metrics, timeoutMs } = o;
  const name = `${hostname()} pid ${process.pid}`;
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
  report(await ledger.reapDeadInstances({ timeoutMs, sole: o.sole }));

  let failing = false;
  const pass = async (): Promise<DeadInstancesReaped> => {
    const beat = await ledger.beatInstance(timeoutMs, name);
    if (beat.rejoined) {
      logger.warn(
        { event: 'liveness', instance: beat.instanceId },
        `this gateway's beats stopped for ${timeoutMs} ms and another gateway declared it dead: the calls it had in flight were refunded; it goes on as instance ${beat.instanceId}`,
      );
    }
    return beat.steady ? report(await ledger.reapDeadInstances({ timeoutMs })) : NOTHING;
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
