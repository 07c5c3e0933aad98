import type { RateLimitStore } from './rate-limit.js';
import { systemClock } from '../clock.js';

/** The subset of an ioredis / node-redis client the store uses. */
export interface RedisEvalClient {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
}

// INCR and PEXPIRE in one atomic step, so every gateway sees one counter per window.
const HIT = `local c = redis.call('INCR', KEYS[1])
if c == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {c, t}`;

// A block of up to ARGV[2] hits taken at once, never past the limit ARGV[3]:
// the counter moves by what is granted (at least 1, so a refused hit is
// counted as before). Returns {count, ttl, granted}.
const LEASE = `local c = tonumber(redis.call('GET', KEYS[1]) or '0')
local g = math.min(tonumber(ARGV[2]), tonumber(ARGV[3]) - c)
if g < 0 then g = 0 end
c = redis.call('INCRBY', KEYS[1], math.max(g, 1))
if c == math.max(g, 1) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); t = tonumber(ARGV[1]) end
return {c, t, g}`;

/** Hits a gateway takes in one Redis round trip: 1/64 of the limit (so exact for small limits). */
const LEASE_FRACTION = 64;

export interface RedisRateLimitStoreOptions {
  /** Key prefix (default `farebox:rl:`). */
  prefix?: string;
  /**
   * Called when Redis fails. The store then lets the request through (rate
   * limits degrade to none rather than taking the gateway down; money is never
   * at stake in a rate limit) and `healthy` turns false until Redis answers again.
   */
  onError?: (err: unknown) => void;
  /** Current time in ms (tests). */
  now?: () => number;
}

/** Hits this gateway took from the shared counter and has not used yet, for one key's current window. */
interface Lease {
  /** The shared count when the block was taken (at most the limit). */
  count: number;
  left: number;
  resetAt: number;
  /** A block being fetched: hits arriving meanwhile wait for it instead of asking Redis too. */
  pending: Promise<void> | undefined;
}

/**
 * A fixed-window rate-limit store shared by every gateway through Redis.
 *
 * With a limit (every `enforceRateLimit` passes one), a gateway takes hits
 * from the shared counter in blocks of limit/64 and spends them locally, so
 * most hits cost no Redis round trip. The shared counter counts every block
 * taken, so the gateways together never let more than the limit through in a
 * window; hits a gateway took and did not use before the window ends are
 * lost to the others (at most limit/64 per gateway and key). A limit under
 * 128 is taken one hit at a time, exactly as without blocks.
 */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisEvalClient;
  readonly #prefix: string;
  readonly #onError: (err: unknown) => void;
  readonly #now: () => number;
  readonly #leases = new Map<string, Lease>();
  #lastPrune: number;
  #healthy = true;

  constructor(redis: RedisEvalClient, options: RedisRateLimitStoreOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'farebox:rl:';
    this.#onError = options.onError ?? (() => undefined);
    this.#now = options.now ?? systemClock;
    this.#lastPrune = this.#now();
  }

  /** False after a Redis failure, until the next successful hit. */
  get healthy(): boolean {
    return this.#healthy;
  }

  async hit(key: string, windowMs: number, limit?: number) {
    const block = limit === undefined ? 1 : Math.floor(limit / LEASE_FRACTION);
    if (block < 2) return this.#hitOne(key, windowMs);
    for (;;) {
      const now = this.#now();
      this.#prune(now);
      let lease = this.#leases.get(key);
      if (lease && lease.resetAt <= now && !lease.pending) {
        this.#leases.delete(key);
        lease = undefined;
      }
      if (lease && lease.left > 0 && lease.resetAt > now) {
        lease.left--;
        return { count: lease.count, resetMs: lease.resetAt - now };
      }
      if (lease?.pending) {
        await lease.pending;
        continue;
      }
      // Take a block; this hit uses its first token.
      const entry: Lease = lease ?? { count: 0, left: 0, resetAt: 0, pending: undefined };
      this.#leases.set(key, entry);
      let answer: { count: number; resetMs: number } | undefined;
      entry.pending = this.#lease(key, windowMs, block, limit!).then(
        ({ count, ttl, granted }) => {
          entry.count = count;
          entry.resetAt = this.#now() + ttl;
          entry.left = Math.max(0, granted - 1);
          // Refused (nothing granted): the count is over the limit.
          answer = { count: granted > 0 ? count - granted + 1 : count, resetMs: ttl };
        },
        () => {
          answer = { count: 0, resetMs: windowMs };
        },
      );
      await entry.pending;
      entry.pending = undefined;
      return answer!;
    }
  }

  async #hitOne(key: string, windowMs: number) {
    try {
      const [count, ttl] = (await this.#redis.eval(HIT, 1, `${this.#prefix}${key}`, windowMs)) as [number, number];
      this.#healthy = true;
      return { count: Number(count), resetMs: Number(ttl) };
    } catch (err) {
      this.#healthy = false;
      this.#onError(err);
      return { count: 0, resetMs: windowMs };
    }
  }

  async #lease(key: string, windowMs: number, block: number, limit: number) {
    try {
      const [count, ttl, granted] = (await this.#redis.eval(LEASE, 1, `${this.#prefix}${key}`, windowMs, block, limit)) as [number, number, number];
      this.#healthy = true;
      return { count: Number(count), ttl: Number(ttl), granted: Number(granted) };
    } catch (err) {
      this.#healthy = false;
      this.#onError(err);
      throw err;
    }
  }

  #prune(now: number) {
    if (now - this.#lastPrune < 60_000) return;
    this.#lastPrune = now;
    for (const [k, l] of this.#leases) if (l.resetAt <= now && !l.pending) this.#leases.delete(k);
  }
}
