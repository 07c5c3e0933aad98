import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisReplayStore } from '../src/index.js';
import { baseOptions, certificateFor, newSigner, post, startProvider, useDevnet } from './helpers.js';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

describe('Redis replay store shared by two instances of one service', () => {
  useDevnet();
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const prefix = `farebox:test:nonce:${process.pid}:${Date.now()}:`;
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of closers) await c();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('serves a certificate once: the replay to the other instance is refused', async () => {
    const platform = await newSigner();
    const a = await startProvider(baseOptions(platform, { replayStore: new RedisReplayStore(redis, { prefix }) }));
    const b = await startProvider(baseOptions(platform, { replayStore: new RedisReplayStore(new Redis(url), { prefix }) }));
    closers.push(
      () => a.provider.close(),
      () => b.provider.close(),
    );
    const body = '{"n":1}';
    const cert = await certificateFor(platform, body);
    const first = await post(a.url, body, { 'farebox-certificate': cert });
    expect(first.status).toBe(200);
    const replay = await post(b.url, body, { 'farebox-certificate': cert });
    expect(replay.status).toBe(401);
    expect(replay.json).toEqual({ error: 'certificate already used (replay)' });
  });

  it('refuses signed calls with 503 while Redis is unreachable, never serving them unchecked', async () => {
    const platform = await newSigner();
    const dead = new Redis('redis://127.0.0.1:1', { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    dead.on('error', () => undefined);
    const p = await startProvider(baseOptions(platform, { replayStore: new RedisReplayStore(dead, { prefix }) }));
    closers.push(() => p.provider.close());
    const body = '{}';
    const r = await post(p.url, body, { 'farebox-certificate': await certificateFor(platform, body) });
    expect(r.status).toBe(503);
    expect(String(r.json?.error)).toMatch(/^replay protection unavailable, call refused/);
    dead.disconnect();
  });
});
