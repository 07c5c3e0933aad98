import { GatewayError } from '../errors.js';
import { systemClock } from '../clock.js';

/** A fixed-window counter store. The memory store serves one process; a Redis store shares limits across gateways. */
export interface RateLimitStore {
  /**
   * Counts one hit on `key` in the current window and returns the count and
   * the window's remaining milliseconds. `limit`, when given, is the rule's
   * limit: a shared store may use it to count hits in blocks (the Redis
   * store does) as long as it never lets more than `limit` through.
   */
  hit(key: string, windowMs: number, limit?: number): Promise<{ count: number; resetMs: number }>;
}

export class MemoryRateLimitStore implements RateLimitStore {
  readonly #windows = new Map<string, { count: number; resetAt: number }>();
  readonly #now: () => number;
  #lastPrune: number;

  /** `now`: the clock windows are measured by, epoch ms (default `Date.now`; the gateway passes its own). */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? systemClock;
    this.#lastPrune = this.#now();
  }

  async hit(key: string, windowMs: number) {
    const now = this.#now();
    if (now - this.#lastPrune > 60_000) {
      for (const [k, w] of this.#windows) if (w.resetAt <= now) this.#windows.delete(k);
      this.#lastPrune = now;
    }
    let w = this.#windows.get(key);
    if (!w || w.resetAt <= now) {
      w = { count: 0, resetAt: now + windowMs };
      this.#windows.set(key, w);
    }
    w.count += 1;
    return { count: w.count, resetMs: w.resetAt - now };
  }
}

export interface RateLimitRule {
  name: string;
  limit: number;
  windowMs: number;
}

/** Throws a 429 `GatewayError` with `Retry-After` when `subject` exceeds `rule`. */
export async function enforceRateLimit(store: RateLimitStore, rule: RateLimitRule, subject: string): Promise<void> {
  const { count, resetMs } = await store.hit(`${rule.name}:${subject}`, rule.windowMs, rule.limit);
  if (count > rule.limit) {
    throw new GatewayError('RATE_LIMITED', 'rate limit exceeded', { rule: rule.name }, { 'Retry-After': String(Math.max(1, Math.ceil(resetMs / 1000))) });
  }
}
