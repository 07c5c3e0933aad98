import autocannon from 'autocannon';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { eventually } from '@farebox/test-kit';

// The load test of issue 10: a fixed offered rate for LOAD_SECONDS (60 by
// default) through the gateway on PostgreSQL with Redis rate limits; no 5xx
// allowed, and every credit accounted for afterwards.
const SECONDS = Number(process.env.FAREBOX_LOAD_SECONDS ?? 60);
const RATE = Number(process.env.FAREBOX_LOAD_RATE ?? 100);

describe(`load: ${RATE} calls/s for ${SECONDS} s`, () => {
  let h: Harness;
  let users: TestUser[];
  beforeAll(async () => {
    h = await startHarness('postgres', {
      env: { FAREBOX_REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
      rateLimits: { authPerMinute: 1000, accountPerMinute: 1_000_000 },
    });
    // The lowest price a service may set: 20 base units (MIN_PRICE_BASE_UNITS).
    await h.publish('loadsvc', { price: '0.000002' });
    users = await Promise.all(Array.from({ length: 4 }, () => h.user()));
  }, 120_000);
  afterAll(() => h?.close());

  it(
    'answers every call without a 5xx and charges exactly the calls that succeeded',
    async () => {
      const result = await autocannon({
        url: h.url,
        connections: 16,
        duration: SECONDS,
        overallRate: RATE,
        requests: users.map((u) => ({
          method: 'POST' as const,
          path: '/v1/call',
          headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
          body: '{"service":"loadsvc","payload":{}}',
        })),
      });
      console.log(
        `load: ${result.requests.total} calls, ${result.requests.average} calls/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, 2xx ${result['2xx']}, 4xx ${result['4xx']}, 5xx ${result['5xx']}, errors ${result.errors}, timeouts ${result.timeouts}`,
      );
      expect(result['5xx']).toBe(0);
      expect(result.errors).toBe(0);
      expect(result['2xx']).toBeGreaterThan(0);
      // Requests still in flight when autocannon stops are finished by the
      // gateway but not counted by autocannon: at most one per connection.
      // Wait for them: no pending hold, and the same count twice in a row.
      let last = '';
      await eventually(
        'the calls in flight when the load stopped are finished',
        async () => {
          const { rows } = await h.gw.core.db.query<{ state: string; n: string }>(
            'SELECT state, count(*) AS n FROM holds WHERE account_id = ANY($1::text[]) GROUP BY state ORDER BY state',
            [users.map((u) => u.id)],
          );
          const now = JSON.stringify(rows);
          const settled = !rows.some((r) => r.state === 'pending') && now === last;
          last = now;
          return settled;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      let charged = 0;
      for (const u of users) charged += 50_000_000 - ((await u.api('/v1/balance')).body.balance_base_units as number);
      const { rows } = await h.gw.core.db.query<{ state: string; n: string }>(
        'SELECT state, count(*) AS n FROM holds WHERE account_id = ANY($1::text[]) GROUP BY state',
        [users.map((u) => u.id)],
      );
      const count = (state: string) => Number(rows.find((r) => r.state === state)?.n ?? 0);
      expect(count('pending')).toBe(0);
      const completed = count('posted');
      expect(charged).toBe(completed * 20);
      expect(completed - result['2xx']).toBeGreaterThanOrEqual(0);
      expect(completed - result['2xx']).toBeLessThanOrEqual(16);
      expect((await h.gw.core.ledger.verify()).ok).toBe(true);
    },
    (SECONDS + 90) * 1000,
  );
});
