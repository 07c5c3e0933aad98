const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

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
  ) {}

  acquire(): Promise<void> {
    const turn = this.queue.then(() => this.take());
    this.queue = turn;
    return turn;
  }

  private async take(): Promise<void> {
    for (;;) {
      const now = Date.now();
      while (this.starts.length && this.starts[0]! <= now - this.windowMs) this.starts.shift();
      if (this.starts.length < this.requests) {
        this.starts.push(now);
        return;
      }
      await sleep(this.starts[0]! + this.windowMs - now + 1);
    }
  }
}
