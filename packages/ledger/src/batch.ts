/** One submitted item of a batch, settled by the flush. */
export interface Pending<I, O> {
  readonly input: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

export interface BatchOptions {
  /** Most items in one statement (default 64). */
  maxSize?: number;
  /**
   * Batches running at once (default 1). While one runs, new items queue up and go together.
   * Measured (`pnpm bench gateway`, 32 callers): 2 gave 968 calls/s and 0.48 ms of PostgreSQL CPU per
   * call, 1 gave 1,077 calls/s and 0.36 ms, with a lower median latency (fewer, larger statements).
   */
  maxInFlight?: number;
}

/**
 * Group commit with natural batching: an item goes out at once when fewer
 * than `maxInFlight` batches are running, so a lone call waits for nothing;
 * under load, items that arrive while batches run are sent together, one
 * statement and one durable commit for all of them.
 */
export class Batcher<I, O> {
  private readonly queue: Array<Pending<I, O>> = [];
  private inFlight = 0;
  private readonly maxSize: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly flush: (batch: Array<Pending<I, O>>) => Promise<void>,
    options: BatchOptions = {},
  ) {
    this.maxSize = options.maxSize ?? 64;
    this.maxInFlight = options.maxInFlight ?? 1;
  }

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxSize);
      this.inFlight++;
      this.flush(batch)
        .catch((error: unknown) => {
          for (const item of batch) item.reject(error);
        })
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}
