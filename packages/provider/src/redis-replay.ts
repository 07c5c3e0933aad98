import type { ReplayStore } from './replay.js';

/** The subset of an ioredis / node-redis client the store uses: `SET key value PX ms NX`. */
export interface RedisSetClient {
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown>;
}

/**
 * A {@link ReplayStore} in Redis, so several instances of one service reject
 * a certificate another instance has already served. `SET NX` with an expiry
 * at the certificate's last acceptable second makes the check atomic. When
 * Redis fails the call is refused (503), never served unchecked.
 *
 * @example
 * import { Redis } from 'ioredis';
 * const provider = createProvider({ ..., replayStore: new RedisReplayStore(new Redis(process.env.REDIS_URL!)) });
 */
export class RedisReplayStore implements ReplayStore {
  constructor(
    private readonly redis: RedisSetClient,
    private readonly options: { prefix?: string; now?: () => number } = {},
  ) {}

  async checkAndRemember(nonce: string, keepUntilUnixSeconds: number): Promise<boolean> {
    const now = (this.options.now ?? Date.now)();
    // Keep it at least until the certificate can no longer be accepted (plus a second of slack).
    const ttlMs = Math.max(1000, keepUntilUnixSeconds * 1000 - now + 1000);
    const reply = await this.redis.set(`${this.options.prefix ?? 'farebox:nonce:'}${nonce}`, '1', 'PX', ttlMs, 'NX');
    return reply === 'OK';
  }
}
