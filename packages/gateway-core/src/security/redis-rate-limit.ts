import type { RateLimitStore } from './rate-limit.js';

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

export interface RedisRateLimitStoreOptions {
  /** Key prefix (default `farebox:rl:`). */
  prefix?: string;
  /**
   * Called when Redis fails. The store then lets the request through (rate
   * limits degrade to none rather than taking the gateway down; money is never
   * at stake in a rate limit) and `healthy` turns false until Redis answers again.
   */
  onError?: (err: unknown) => void;
}

/** A fixed-window rate-limit store shared by every gateway through Redis. */
export class RedisRateLimitStore implements RateLimitStore {
  readonly #redis: RedisEvalClient;
  readonly #prefix: string;
  readonly #onError: (err: unknown) => void;
  #healthy = true;

  constructor(redis: RedisEvalClient, options: RedisRateLimitStoreOptions = {}) {
    this.#redis = redis;
    this.#prefix = options.prefix ?? 'farebox:rl:';
    this.#onError = options.onError ?? (() => undefined);
  }

  /** False after a Redis failure, until the next successful hit. */
  get healthy(): boolean {
    return this.#healthy;
  }

  async hit(key: string, windowMs: number) {
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
}
