/**
 * A clock a test moves: the machine's time plus every `advance()` so far.
 * Pass `clock.now` where a component takes a clock (`createGateway`'s `now`,
 * the provider's `now`): time the test skips passes for them at once, while
 * everything that reads the machine's time keeps running (timers, the
 * devnet's ledgers).
 *
 * @example
 * const clock = testClock();
 * const core = await createGateway({ ...options, now: clock.now });
 * clock.advance(6_000); // the hold has now taken 6 s, for the gateway
 */
export interface TestClock {
  /** Epoch milliseconds (a bound function: pass it as it is). */
  readonly now: () => number;
  /** Moves the clock forward by `ms` (>= 0). */
  advance(ms: number): void;
}

export function testClock(): TestClock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`a clock moves forward: advance(${ms})`);
      offset += ms;
    },
  };
}
