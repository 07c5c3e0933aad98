// What a caller sees of idempotency leases, and what a gateway on embedded
// PGlite gives back at start after a crash (the gateways sharing PostgreSQL:
// liveness.pg.test.ts).
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@farebox/test-kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import { configFromEnv } from '../src/config.js';
import { startHarness, type Harness } from './harness.js';

/** The sign-up credit: 5 USD. */
const SIGNUP_CREDIT = 50_000_000n;

describe('liveness settings', () => {
  const LOCAL = { STELLAR_NETWORK: 'local' };
  const problems = (env: Record<string, string>) => {
    try {
      configFromEnv({ ...LOCAL, ...env });
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
  };

  it('beats every 2 s and calls a gateway dead after 10 s by default; both can be set', () => {
    expect(configFromEnv(LOCAL).liveness).toEqual({ intervalMs: 2_000, timeoutMs: 10_000 });
    expect(configFromEnv({ ...LOCAL, FAREBOX_LIVENESS_INTERVAL_MS: '500', FAREBOX_LIVENESS_TIMEOUT_MS: '3000' }).liveness).toEqual({
      intervalMs: 500,
      timeoutMs: 3_000,
    });
    expect(configFromEnv({ ...LOCAL, FAREBOX_LIVENESS_INTERVAL_MS: '8000' }).liveness).toEqual({ intervalMs: 8_000, timeoutMs: 16_000 });
  });

  it('refuses a timeout under two beats, and values that are not whole milliseconds', () => {
    expect(problems({ FAREBOX_LIVENESS_INTERVAL_MS: '2000', FAREBOX_LIVENESS_TIMEOUT_MS: '3000' })).toEqual([
      'livenessTimeoutMs must be at least 2 x livenessIntervalMs',
    ]);
    expect(problems({ FAREBOX_LIVENESS_INTERVAL_MS: '10' })).toEqual(['livenessIntervalMs must be an integer >= 50']);
    expect(problems({ FAREBOX_LIVENESS_TIMEOUT_MS: 'soon' })).toEqual(['livenessTimeoutMs must be an integer >= 1']);
  });
});

describe('a retry while the first attempt runs', () => {
  let h: Harness;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let arrived = 0;
  beforeAll(async () => {
    h = await startHarness();
    await h.publish('slow', {
      price: '0.1',
      handler: async () => {
        arrived++;
        await gate;
        return { ok: true };
      },
    });
  }, 120_000);
  afterAll(() => h?.close());

  it('answers 409 with Retry-After (the seconds the lease has left, at most the time a dead gateway takes to be found), then the first answer once it is done', async () => {
    const u = await h.user();
    const call = () => u.api('/v1/call', { body: { service: 'slow', payload: {} }, headers: { 'idempotency-key': 'slow-1' } });
    const first = call();
    await eventually('the service has the call', () => arrived === 1);
    const retry = await call();
    expect(retry.status).toBe(409);
    expect(retry.body).toEqual({
      error: 'a request with this idempotency key is still in progress',
      code: 'CONFLICT',
      retryAfterSeconds: Number(retry.headers.get('retry-after')),
    });
    // The lease is 60 s from the first attempt's start, but a dead gateway's lease ends within the liveness
    // timeout (10 s) and two beats (2 s each): the caller is asked back after 14 s at most.
    expect(retry.headers.get('retry-after')).toBe('14');
    release();
    const done = await first;
    expect(done.status).toBe(200);
    const replay = await call();
    expect(replay).toMatchObject({ status: 200, body: { callId: done.body.callId } });
    expect(replay.headers.get('retry-after')).toBeNull();
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(Number(SIGNUP_CREDIT) - 1_000_000);
  });
});

describe('a gateway on embedded PGlite restarted after a crash', () => {
  it('gives back the holds and idempotency leases its dead predecessor left, before it serves', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-restart-'));
    const first = await startHarness('pglite', { dataDir });
    const u = await first.user();
    const crashed = first.gw.core.ledger;
    // A call's hold and lease under way (stamped with this gateway's instance), and a key-less hold.
    let holdId: string | undefined;
    void crashed.withIdempotency(u.id, 'k-crash', 'hash', async () => {
      holdId = (await crashed.hold(u.id, 1_000_000n, { callId: 'c1', service: 'x', idempotencyKey: 'k-crash' })).hold.id;
      await new Promise(() => undefined);
    });
    const keyless = await crashed.hold(u.id, 2_000_000n, { callId: 'c2', service: 'x' });
    await eventually('the call holds its credits', () => holdId !== undefined);
    // The process dies: its database is gone from under it, it leaves nothing in order.
    await first.gw.core.db.close();

    const h = await startHarness('pglite', { dataDir });
    try {
      const { ledger } = h.gw.core;
      // No hold timeout waited out: given back at start.
      expect((await ledger.getHold(holdId!)).voidReason).toBe('its process stopped: voided by the reaper');
      expect((await ledger.getHold(keyless.hold.id)).state).toBe('voided');
      expect((await ledger.balance(u.id)).balance).toBe(SIGNUP_CREDIT);
      // The key's retry runs at once.
      expect(await ledger.withIdempotency(u.id, 'k-crash', 'hash', async () => 'ran')).toEqual({ replayed: false, response: 'ran' });
      expect((await ledger.verify()).mismatches).toEqual([]);
      expect(h.logs().some((l) => l.includes('gave back the holds and idempotency leases of a gateway that stopped'))).toBe(true);
    } finally {
      await h.close();
      await first.close();
    }
  }, 120_000);
});
