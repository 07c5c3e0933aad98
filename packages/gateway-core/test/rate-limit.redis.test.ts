import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisRateLimitStore, enforceRateLimit } from '../src/index.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `farebox:test:${process.pid}:${Date.now()}:`;

describe('Redis rate-limit store', () => {
  const a = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  const b = new Redis(url, { lazyConnect: false, maxRetriesPerRequest: 1 });
  afterAll(async () => {
    const keys = await a.keys(`${prefix}*`);
    if (keys.length) await a.del(...keys);
    a.disconnect();
    b.disconnect();
  });

  it('shares one limit between two gateways', async () => {
    const gw1 = new RedisRateLimitStore(a, { prefix });
    const gw2 = new RedisRateLimitStore(b, { prefix });
    const rule = { name: 'account', limit: 5, windowMs: 60_000 };
    for (let i = 0; i < 5; i++) await enforceRateLimit(i % 2 ? gw1 : gw2, rule, 'acct_1');
    await expect(enforceRateLimit(gw1, rule, 'acct_1')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(enforceRateLimit(gw2, rule, 'acct_1')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(enforceRateLimit(gw2, rule, 'acct_2')).resolves.toBeUndefined();
  });

  it('counts exactly under concurrency (atomic increments)', async () => {
    const gw1 = new RedisRateLimitStore(a, { prefix });
    const gw2 = new RedisRateLimitStore(b, { prefix });
    const rule = { name: 'burst', limit: 40, windowMs: 60_000 };
    const results = await Promise.allSettled(Array.from({ length: 100 }, (_, i) => enforceRateLimit(i % 2 ? gw1 : gw2, rule, 'ip')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(40);
  });

  it('lets requests through and reports unhealthy when Redis is down', async () => {
    const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    dead.on('error', () => undefined);
    const errors: unknown[] = [];
    const store = new RedisRateLimitStore(dead, { prefix, onError: (e) => errors.push(e) });
    await expect(enforceRateLimit(store, { name: 'x', limit: 1, windowMs: 1000 }, 's')).resolves.toBeUndefined();
    expect(store.healthy).toBe(false);
    expect(errors).toHaveLength(1);
    dead.disconnect();
  });
});
