import { describe, expect, it } from 'vitest';
import { GatewayError, MemoryRateLimitStore, enforceRateLimit } from '../src/index.js';
import { testClock } from '@farebox/test-kit';

describe('rate limits', () => {
  it('allow the limit, then refuse with 429 and a Retry-After, per subject', async () => {
    const store = new MemoryRateLimitStore();
    const rule = { name: 'auth-ip', limit: 3, windowMs: 60_000 };
    for (let i = 0; i < 3; i++) await enforceRateLimit(store, rule, '10.0.0.1');
    const err = await enforceRateLimit(store, rule, '10.0.0.1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayError);
    expect((err as GatewayError).code).toBe('RATE_LIMITED');
    expect(Number((err as GatewayError).headers?.['Retry-After'])).toBeGreaterThan(0);
    await expect(enforceRateLimit(store, rule, '10.0.0.2')).resolves.toBeUndefined();
  });

  it('opens a new window once the old one has passed, by the store’s clock', async () => {
    const clock = testClock();
    const store = new MemoryRateLimitStore({ now: clock.now });
    const rule = { name: 'r', limit: 1, windowMs: 60_000 };
    await enforceRateLimit(store, rule, 'x');
    await expect(enforceRateLimit(store, rule, 'x')).rejects.toThrow('rate limit exceeded');
    clock.advance(59_000);
    await expect(enforceRateLimit(store, rule, 'x')).rejects.toMatchObject({ headers: { 'Retry-After': '1' } });
    clock.advance(1_000);
    await expect(enforceRateLimit(store, rule, 'x')).resolves.toBeUndefined();
  });
});
