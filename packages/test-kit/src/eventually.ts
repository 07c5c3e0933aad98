import { setTimeout as sleep } from 'node:timers/promises';

export interface EventuallyOptions {
  /** Give up after this long (default 10 s): the error names what was awaited and the last answer or error. */
  timeoutMs?: number;
  /** Pause between tries (default 25 ms). */
  intervalMs?: number;
}

/**
 * Polls `check` until it returns a truthy value (resolved with it) or the
 * deadline passes (rejected, naming `what` and the last value or error). The
 * one way the suites wait for something another process or timer does: no
 * fixed sleeps.
 *
 * @example
 * const ready = await eventually('the wallet is set up', async () => (await chain.balances(a)).usdc !== null);
 */
export async function eventually<T>(what: string, check: () => T | Promise<T>, options: EventuallyOptions = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const intervalMs = options.intervalMs ?? 25;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  let failure: unknown;
  for (;;) {
    try {
      last = await check();
      failure = undefined;
      if (last) return last as NonNullable<T>;
    } catch (err) {
      failure = err;
    }
    if (Date.now() >= deadline) {
      const why = failure !== undefined ? `last error: ${failure instanceof Error ? failure.message : String(failure)}` : `last value: ${JSON.stringify(last)}`;
      throw new Error(`not within ${timeoutMs} ms: ${what} (${why})`, failure !== undefined ? { cause: failure } : undefined);
    }
    await sleep(intervalMs);
  }
}
