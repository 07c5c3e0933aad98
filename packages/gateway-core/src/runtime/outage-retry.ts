import { systemClock, type Clock } from '../clock.js';
import { isDatabaseUnavailable } from '../db-errors.js';

// A hold's post or void that meets a database outage is asked again, not
// given up: both are idempotent in the ledger (a second post or void of a
// resolved hold changes nothing and reports its final state), so asking
// again can neither charge twice nor refund twice. The caller waits a
// bounded time; after that the gateway goes on asking in the background
// until the hold is resolved (or the reaper has resolved it), so the money a
// lost statement left held comes back as soon as the database does, not when
// the hold times out.

export interface OutageRetryOptions {
  /** How long the caller waits for the database before the error is thrown (ms). */
  waitMs: number;
  /** How long the background goes on asking after that (ms; the hold's own timeout is the natural bound). */
  keepTryingMs: number;
  /** Told when the background gives up or fails for another reason. */
  log: (message: string, err?: unknown) => void;
  /** Pauses between attempts (ms), the last one repeated. */
  pausesMs?: readonly number[];
  /** What resolves the operation once the background gives up (default: the hold reaper, for posts and voids). */
  resolvedBy?: string;
  /**
   * The gateway's clock (default the machine's): `waitMs` and `keepTryingMs` are measured by it. The pauses between
   * attempts are the machine's timers; a clock moved ahead ends the wait at the next attempt.
   */
  now?: Clock;
}

const PAUSES_MS = [100, 250, 500, 1000, 2000] as const;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref?.());

/**
 * Runs `op`; while it fails because the database cannot be reached, runs it
 * again (pauses of 0.1, 0.25, 0.5, 1 then 2 s) for up to `waitMs`. Any other
 * error is thrown at once. When the wait runs out, the last error is thrown
 * and the attempts go on in the background for `keepTryingMs`; `background`
 * is then given their outcome (`op`'s result, or undefined when they gave up).
 */
export async function throughOutage<T>(
  op: () => Promise<T>,
  what: string,
  o: OutageRetryOptions,
  background?: (outcome: Promise<T | undefined>) => void,
): Promise<T> {
  const pauses = o.pausesMs ?? PAUSES_MS;
  const now = o.now ?? systemClock;
  const started = now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await op();
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      const pause = pauses[Math.min(attempt, pauses.length - 1)]!;
      if (now() - started + pause > o.waitMs) {
        const outcome = inBackground(op, what, o, pauses, now);
        background?.(outcome);
        throw err;
      }
      await sleep(pause);
    }
  }
}

async function inBackground<T>(op: () => Promise<T>, what: string, o: OutageRetryOptions, pauses: readonly number[], now: Clock): Promise<T | undefined> {
  const until = now() + o.keepTryingMs;
  while (now() < until) {
    await sleep(pauses[pauses.length - 1]!);
    try {
      return await op();
    } catch (err) {
      if (!isDatabaseUnavailable(err)) {
        o.log(`${what} failed after the database came back`, err);
        return undefined;
      }
    }
  }
  o.log(`${what} still waits for the database; ${o.resolvedBy ?? 'the hold reaper'} resolves it`);
  return undefined;
}
