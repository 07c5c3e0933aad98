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

  it('takes hits in blocks of limit/64: one Redis round trip per block, and two gateways together let exactly the limit through', async () => {
    let evals = 0;
    const counting = (r: Redis) => ({
      eval: (script: string, n: number, ...args: Array<string | number>) => {
        evals++;
        return r.eval(script, n, ...args);
      },
    });
    const gw1 = new RedisRateLimitStore(counting(a), { prefix });
    const gw2 = new RedisRateLimitStore(counting(b), { prefix });
    const rule = { name: 'blocks', limit: 640, windowMs: 60_000 };
    let passed = 0;
    for (let i = 0; i < 700; i++) {
      const ok = await enforceRateLimit(i % 2 ? gw1 : gw2, rule, 'acct').then(
        () => true,
        (e: { code?: string }) => {
          expect(e.code).toBe('RATE_LIMITED');
          return false;
        },
      );
      if (ok) passed++;
    }
    expect(passed).toBe(640);
    // 64 blocks of 10 for the 640 hits let through, then one round trip per refused hit.
    expect(evals).toBe(64 + 60);
    expect(Number(await a.get(`${prefix}blocks:acct`))).toBe(700);
  });

  it('never lets more than the limit through when hits race on two gateways taking blocks', async () => {
    const gw1 = new RedisRateLimitStore(a, { prefix });
    const gw2 = new RedisRateLimitStore(b, { prefix });
    const rule = { name: 'race', limit: 640, windowMs: 60_000 };
    const results = await Promise.allSettled(Array.from({ length: 1000 }, (_, i) => enforceRateLimit(i % 2 ? gw1 : gw2, rule, 'acct')));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(640);
  });

  it('lets requests through and reports unhealthy when Redis is down', async () => {
    const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    dead.on('error', () => undefined);
    const errors: unknown[] = [];
    const store = new RedisRateLimitStore(dead, { prefix, onError: (e) => errors.push(e) });
    await expect(enforceRateLimit(store, { name: 'x', limit: 1, windowMs: 1000 }, 's')).resolves.toBeUndefined();
    expect(store.healthy).toBe(false);
    expect(errors).toHaveLength(1);
    // A limit taken in blocks too.
    await expect(enforceRateLimit(store, { name: 'y', limit: 6400, windowMs: 1000 }, 's')).resolves.toBeUndefined();
    expect(errors).toHaveLength(2);
    dead.disconnect();
  });
});
