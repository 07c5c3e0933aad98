/**
 * Remembers certificate nonces so that each platform-signed call is served
 * once. Implementations must keep a nonce at least until
 * `keepUntilUnixSeconds` (the last second its certificate could still be
 * accepted) and answer atomically: two concurrent calls with the same nonce
 * get `true` at most once. Share one store between replicas of a service.
 */
export interface ReplayStore {
  /** `true` the first time a nonce is seen, `false` for a replay. */
  checkAndRemember(nonce: string, keepUntilUnixSeconds: number): Promise<boolean>;
}

export interface InMemoryReplayStoreOptions {
  /** Clock in milliseconds, for tests. Defaults to `Date.now`. */
  now?: () => number;
}

/**
 * The default {@link ReplayStore}: one process, in memory. Each nonce is kept
 * until its certificate can no longer be accepted (expiry plus clock
 * tolerance), never less; expired entries are pruned as new ones arrive, so
 * memory is bounded by the call rate times the longest acceptance window
 * (about 7 minutes). Not shared between processes: run several replicas
 * behind one store instead.
 *
 * @example
 * const provider = createProvider({ ..., replayStore: new InMemoryReplayStore() });
 */
export class InMemoryReplayStore implements ReplayStore {
  private readonly seen = new Map<string, number>();
  private readonly now: () => number;
  private nextPruneAt = 0;
  private sizeAtLastPrune = 0;

  constructor(options: InMemoryReplayStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /** Number of nonces currently remembered. */
  get size(): number {
    return this.seen.size;
  }

  async checkAndRemember(nonce: string, keepUntilUnixSeconds: number): Promise<boolean> {
    const nowSeconds = Math.floor(this.now() / 1000);
    this.maybePrune(nowSeconds);
    const until = this.seen.get(nonce);
    if (until !== undefined && until >= nowSeconds) return false;
    this.seen.set(nonce, keepUntilUnixSeconds);
    return true;
  }

  // Full scans are amortised: at most once a second, or when the map doubled.
  private maybePrune(nowSeconds: number): void {
    if (nowSeconds < this.nextPruneAt && this.seen.size < Math.max(1024, this.sizeAtLastPrune * 2)) return;
    for (const [nonce, until] of this.seen) if (until < nowSeconds) this.seen.delete(nonce);
    this.nextPruneAt = nowSeconds + 1;
    this.sizeAtLastPrune = this.seen.size;
  }
}
