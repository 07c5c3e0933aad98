// The certificate of a call is signed while its hold is at the database
// (calls.ts). A hold that waits long (here: the account's row locked by
// another transaction while the gateway's clock moves 5.5 s) must not send a
// certificate made before the wait: the service gets one signed after the
// hold is placed.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CERTIFICATE_HEADER } from '@farebox/protocol';
import { eventually, testClock } from '@farebox/test-kit';
import { startHarness, type Harness } from './harness.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

let h: Harness;
const clock = testClock();
const seen: IncomingHttpHeaders[] = [];
const service = createServer((req, res) => {
  seen.push(req.headers);
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'));
});

beforeAll(async () => {
  h = await startHarness('postgres', { now: clock.now });
  await new Promise<void>((r) => service.listen(0, '127.0.0.1', r));
  await h.registerRaw('aged', `http://127.0.0.1:${(service.address() as AddressInfo).port}`, '0.01');
}, 120_000);
afterAll(async () => {
  await new Promise((r) => service.close(r));
  await h?.close();
});

/** The certificate's claims (`v1.<claims>.<signature>`). */
function claims(header: string | string[] | undefined): { iat: number; cid: string } {
  const part = String(header).split('.')[1]!;
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as { iat: number; cid: string };
}

it('signs a fresh certificate when the hold waited 5 s or more by the gateway’s clock, and the call is charged once', async () => {
  const u = await h.user();
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ table_schema: string }>(
      `SELECT table_schema FROM information_schema.tables WHERE table_name = 'accounts' AND table_schema LIKE $1`,
      [`gw_test_${process.pid}_%`],
    );
    let schema: string | undefined;
    for (const r of rows) {
      const found = await admin.query(`SELECT 1 FROM "${r.table_schema}".accounts WHERE id = $1`, [u.id]);
      if (found.rowCount) schema = r.table_schema;
    }
    expect(schema).toBeDefined();
    await admin.query('BEGIN');
    await admin.query(`SELECT balance FROM "${schema}".accounts WHERE id = $1 FOR UPDATE`, [u.id]);
    const call = u.api('/v1/call', { body: { service: 'aged', payload: { q: 1 } } });
    // The hold's statement waits for the row lock (the certificate for it is signed meanwhile)...
    await eventually(
      'the hold waits for the locked row',
      async () => (await admin.query('SELECT 1 FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))')).rows.length > 0,
    );
    // ...while 5.5 s pass for the gateway.
    clock.advance(5_500);
    const movedAt = clock.now();
    const releasedAt = Math.floor(movedAt / 1000);
    await admin.query('COMMIT');
    const r = await call;
    expect(r.status).toBe(200);
    // The hold started before the clock moved.
    expect(Date.parse(r.body.trace.steps.find((x: { name: string }) => x.name === 'hold_credits').startedAt)).toBeLessThan(movedAt - 5_000);
    expect(seen).toHaveLength(1);
    const c = claims(seen[0]![CERTIFICATE_HEADER]);
    expect(c.cid).toBe(r.body.callId);
    // Signed after the lock was released, not 5.5 s before it.
    expect(c.iat).toBeGreaterThanOrEqual(releasedAt);
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(50_000_000 - 100_000);
  } finally {
    await admin.query('ROLLBACK').catch(() => undefined);
    await admin.end();
  }
}, 60_000);
