// A gateway on PostgreSQL restarted after a crash gives back what its
// predecessor held at start, before it serves: the predecessor ran on this
// host and its process is gone (here: the same process name, as a restarted
// container keeps its host name and pid; or a pid that no longer runs), so
// neither the liveness timeout (60 s here) nor the hold timeout is waited out.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@farebox/test-kit';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { dropTestSchema, startHarness } from './harness.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const SIGNUP_CREDIT = 50_000_000n;
const LIVENESS = { livenessIntervalMs: 500, livenessTimeoutMs: 60_000 };

describe('a gateway on PostgreSQL restarted after a crash', () => {
  it('gives back the holds and idempotency leases its predecessor on this host left, at start, before it serves', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-restart-pg-'));
    const databaseSchema = `restart_${process.pid}_${Date.now()}`;
    const first = await startHarness('postgres', { dataDir, databaseSchema, ...LIVENESS });
    const u = await first.user();
    const crashed = first.gw.core.ledger;
    let holdId: string | undefined;
    void crashed
      .withIdempotency(u.id, 'k-crash', 'hash', async () => {
        holdId = (await crashed.hold(u.id, 1_000_000n, { callId: 'c1', service: 'x', idempotencyKey: 'k-crash' })).hold.id;
        await new Promise(() => undefined);
      })
      .catch(() => undefined);
    const keyless = await crashed.hold(u.id, 2_000_000n, { callId: 'c2', service: 'x' });
    await eventually('the call holds its credits', () => holdId !== undefined);
    const instance = crashed.instanceId;
    // The process dies: its connections are gone, its beats stop, nothing is left in order.
    await first.gw.core.db.close();
    // Three beats (1.5 s) since its last one, by the database's clock.
    const admin = new pg.Client({ connectionString: DATABASE_URL });
    await admin.connect();
    try {
      await eventually('the crashed gateway has missed three beats', async () => {
        const { rows } = await admin.query(`SELECT now() - beat_at > interval '1.6 seconds' AS old FROM "${databaseSchema}".ledger_instances WHERE id = $1`, [
          instance,
        ]);
        return rows[0]?.old === true;
      });
    } finally {
      await admin.end();
    }

    const h = await startHarness('postgres', { dataDir, databaseSchema, ...LIVENESS });
    try {
      const { ledger } = h.gw.core;
      // Given back at start, before the first request (the liveness timeout is 60 s, the hold timeout longer).
      expect((await ledger.getHold(holdId!)).voidReason).toBe('its process stopped: voided by the reaper');
      expect((await ledger.getHold(keyless.hold.id)).state).toBe('voided');
      expect((await ledger.db.query('SELECT id FROM ledger_instances WHERE id = $1', [instance])).rows).toEqual([]);
      expect((await ledger.balance(u.id)).balance).toBe(SIGNUP_CREDIT);
      expect(await ledger.withIdempotency(u.id, 'k-crash', 'hash', async () => 'ran')).toEqual({ replayed: false, response: 'ran' });
      expect((await ledger.verify()).mismatches).toEqual([]);
      expect(h.logs().some((l) => l.includes('gave back the holds and idempotency leases of a gateway that stopped'))).toBe(true);
    } finally {
      await h.close();
      await first.close().catch(() => undefined);
      await dropTestSchema(databaseSchema);
    }
  }, 120_000);
});
