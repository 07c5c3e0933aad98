import type { Redis } from 'ioredis';
import type { Invalidation, InvalidationBus } from './credential-cache.js';

const CHANNEL = 'farebox:credentials:invalidate';

/**
 * Invalidations over Redis pub/sub: every gateway on the same Redis hears
 * every revocation. A subscriber that loses its connection may miss
 * messages, so it reports a gap (the cache empties) and is not `live` until
 * it has subscribed again.
 */
export class RedisInvalidationBus implements InvalidationBus {
  readonly #pub: Redis;
  readonly #sub: Redis;
  #live = false;
  #onGap: () => void = () => undefined;

  constructor(redis: Redis) {
    this.#pub = redis;
    this.#sub = redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.#sub.on('error', () => undefined);
    const down = () => {
      if (this.#live) this.#onGap();
      this.#live = false;
    };
    this.#sub.on('close', down);
    this.#sub.on('end', down);
    this.#sub.on('ready', () => {
      this.#sub.subscribe(CHANNEL).then(() => {
        this.#onGap();
        this.#live = true;
      }, down);
    });
  }

  get live(): boolean {
    return this.#live;
  }

  publish(message: Invalidation): void {
    this.#pub.publish(CHANNEL, JSON.stringify(message)).catch(() => undefined);
  }

  subscribe(onMessage: (message: Invalidation) => void, onGap: () => void): void {
    this.#onGap = onGap;
    this.#sub.on('message', (channel: string, text: string) => {
      if (channel !== CHANNEL) return;
      try {
        const m = JSON.parse(text) as Record<string, unknown>;
        if (typeof m.keyId === 'string') onMessage({ keyId: m.keyId });
        else if (typeof m.userId === 'string') onMessage({ userId: m.userId });
      } catch {
        onGap();
      }
    });
  }

  close(): void {
    this.#live = false;
    this.#sub.disconnect();
  }
}
