/** The time a budget (and the client's 429 backoff) reads and waits: epoch ms, and a wait of `ms` on it. */
export interface EscrowClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

/** The machine's time. */
export const systemClock: EscrowClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
};

/**
 * A sliding-window request budget: at most `requests` starts in any `windowMs`.
 * Callers beyond it wait (first come, first served) until the window allows them.
 */
export class RequestBudget {
  private readonly starts: number[] = [];
  private queue: Promise<void> = Promise.resolve();

  constructor(
    readonly requests: number,
    readonly windowMs: number,
    private readonly clock: EscrowClock = systemClock,
  ) {}

  acquire(): Promise<void> {
    const turn = this.queue.then(() => this.take());
    this.queue = turn;
    return turn;
  }

  private async take(): Promise<void> {
    for (;;) {
      const now = this.clock.now();
      while (this.starts.length && this.starts[0]! <= now - this.windowMs) this.starts.shift();
      if (this.starts.length < this.requests) {
        this.starts.push(now);
        return;
      }
      await this.clock.sleep(this.starts[0]! + this.windowMs - now + 1);
    }
  }
}
