// A call's post that meets a database outage, on the gateway's clock: the
// caller waits `dbOutageWaitMs` by that clock and the background goes on
// asking for the hold's timeout by it (runtime/outage-retry.ts), so the test
// moves time instead of waiting. The outage is the database
// refusing the post as a lost connection does (SQLSTATE 08006) while the test
// says so; everything else keeps working, as after the first statements of a
// real outage. (A PostgreSQL server killed under load: apps/gateway's
// db-outage.pg.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@farebox/test-kit';
import { asDatabaseUnavailable } from '../src/index.js';
import { startCoreStack, type CoreStack } from './core-kit.js';

const PRICE = 200_000n;
// Half a minute, under the idempotency key's 60 s lease and the hold's 40 s timeout (core-kit: callTimeoutMs 5 s).
const WAIT_MS = 30_000;
const DB_DOWN = 'database unavailable; nothing was charged, retry in a few seconds';
const CHARGE_PENDING =
  'database unavailable; the service answered, and its charge is recorded or refunded once the database is back: ask again with the same Idempotency-Key to learn which';

let s: CoreStack;
const logs: string[] = [];
let served = 0;
let failing = 0;

beforeAll(async () => {
  // Half a minute of waiting for the database, by the clock: without the clock moving, a caller would wait all of it
  // (longer than the test may take).
  s = await startCoreStack({ gateway: { dbOutageWaitMs: WAIT_MS, log: (m) => logs.push(m) } });
  await s.publish('outage-echo', '0.02', (payload) => {
    served++;
    return { echo: payload };
  });
  // Fails the first time (its refund then meets the outage), answers after.
  await s.publish('outage-fail', '0.03', () => {
    failing++;
    if (failing === 1) throw new Error('upstream broke');
    return { ok: true };
  });
  await s.core.db.query(`CREATE TABLE outage_state (down boolean NOT NULL)`);
  await s.core.db.query(`INSERT INTO outage_state VALUES (false)`);
  await s.core.db.query(`CREATE SEQUENCE outage_refusals`);
  await s.core.db.query(`CREATE FUNCTION outage_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.state <> OLD.state AND (SELECT down FROM outage_state) THEN
        PERFORM nextval('outage_refusals');
        RAISE EXCEPTION 'Connection terminated unexpectedly' USING ERRCODE = '08006';
      END IF;
      RETURN NEW;
    END $$`);
  await s.core.db.query(`CREATE TRIGGER outage_refuse BEFORE UPDATE ON holds FOR EACH ROW EXECUTE FUNCTION outage_refuse()`);
  // An idempotency key's answer or release is refused too: it waits for the database like the post or void.
  await s.core.db.query(`CREATE FUNCTION outage_refuse_key() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF (SELECT down FROM outage_state) THEN
        RAISE EXCEPTION 'Connection terminated unexpectedly' USING ERRCODE = '08006';
      END IF;
      RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
    END $$`);
  await s.core.db.query(`CREATE TRIGGER outage_refuse_key BEFORE UPDATE OR DELETE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION outage_refuse_key()`);
}, 60_000);
afterAll(async () => {
  await s?.close();
});

const down = (yes: boolean) => s.core.db.query('UPDATE outage_state SET down = $1', [yes]);
const refusals = async () =>
  Number((await s.core.db.query<{ n: string }>(`SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS n FROM outage_refusals`)).rows[0]!.n);
const holds = async (accountId: string) =>
  (await s.core.db.query<{ state: string }>('SELECT state FROM holds WHERE account_id = $1', [accountId])).rows.map((r) => r.state);

describe('a call whose charge or refund meets a database outage, on the gateway’s clock', () => {
  it('answers 503 charge pending once the clock passes the wait, charges once when the database is back, and the key then answers the result', async () => {
    const u = await s.user();
    const before = await s.credits(u);
    const call = () => s.core.calls.call(u.principal, { service: 'outage-echo', payload: { n: 1 } }, { idempotencyKey: 'outage-1' });
    await down(true);
    const seen = await refusals();
    const first = call().catch((e: unknown) => e);
    await eventually('the post met the outage', async () => (await refusals()) > seen);
    // The caller is answered at the next attempt after the clock passes the wait (not half a minute later).
    s.clock.advance(WAIT_MS);
    expect(await first).toMatchObject({ status: 503, message: CHARGE_PENDING, headers: { 'Retry-After': '5' } });
    expect(served).toBe(1);
    // While the database refuses, the same key is in progress (the charge is not known yet).
    await expect(call()).rejects.toMatchObject({ status: 409 });

    await down(false);
    // The background asks again (every 2 s) and records the charge; the same key then answers the call's own result.
    const answer = await eventually(
      'the same key answers the call',
      async () => {
        const r = await call().catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(answer.value).toMatchObject({ result: { echo: { n: 1 } }, cost: { base_units: Number(PRICE) } });
    expect(served).toBe(1);
    expect(await holds(u.user.id)).toEqual(['posted']);
    expect(await s.credits(u)).toBe(before - PRICE);
    expect((await s.core.ledger.verify()).ok).toBe(true);
  });

  it('gives the hold to the reaper once the clock passes the hold’s timeout: refunded, and the key runs anew', async () => {
    const u = await s.user();
    const before = await s.credits(u);
    const call = () => s.core.calls.call(u.principal, { service: 'outage-echo', payload: { n: 2 } }, { idempotencyKey: 'outage-2' });
    await down(true);
    const seen = await refusals();
    const first = call().catch((e: unknown) => e);
    await eventually('the post met the outage', async () => (await refusals()) > seen);
    s.clock.advance(WAIT_MS);
    expect(await first).toMatchObject({ status: 503, message: CHARGE_PENDING });
    // The background asks for the hold's timeout by the clock: past it, it stops and says who resolves the hold.
    s.clock.advance(s.core.config.holdTimeoutMs);
    await eventually(
      'the background gives up',
      () => logs.some((l) => /^post of hold \S+ still waits for the database; the hold reaper resolves it$/.test(l)),
      {
        timeoutMs: 20_000,
      },
    );
    await down(false);
    // The hold is past its timeout by the same clock: the reaper (this pass, or its timer's) refunds it.
    await s.core.reapExpiredHolds();
    expect(await holds(u.user.id)).toEqual(['voided']);
    expect(await s.credits(u)).toBe(before);
    // The key was released when the background gave up: the same key runs the call anew, charged once.
    const again = await eventually('the key runs anew', async () => (await call().catch(() => undefined))?.status === 200);
    expect(again).toBe(true);
    expect(served).toBe(3);
    expect((await holds(u.user.id)).sort()).toEqual(['posted', 'voided']);
    expect(await s.credits(u)).toBe(before - PRICE);
    expect((await s.core.ledger.verify()).ok).toBe(true);
  });

  it('frees the key of a call whose refund met the outage as soon as the database is back: a retry runs, not a 409 until the lease ends', async () => {
    const u = await s.user();
    const before = await s.credits(u);
    const call = () => s.core.calls.call(u.principal, { service: 'outage-fail', payload: {} }, { idempotencyKey: 'outage-3' });
    await down(true);
    const seen = await refusals();
    const first = call().catch((e: unknown) => e);
    await eventually('the refund met the outage', async () => (await refusals()) > seen);
    s.clock.advance(WAIT_MS);
    // The driver's error, which every host answers as the 503 of an outage.
    expect(asDatabaseUnavailable(await first)).toMatchObject({ status: 503, message: DB_DOWN, headers: { 'Retry-After': '5' } });
    // The key's release waits for the database as well: until then a retry is told the call is in progress.
    await expect(call()).rejects.toMatchObject({ status: 409 });
    await down(false);
    // Once back, the refund and the release are asked again (within seconds, not the 60 s lease): the retry runs.
    const again = await eventually(
      'the same key runs again',
      async () => {
        const r = await call().catch(() => undefined);
        return r?.status === 200 ? r : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    expect(again.value).toMatchObject({ result: { ok: true } });
    expect(failing).toBe(2);
    // The failed attempt charged nothing (its hold refunded, or reused by the retry), the retry charged once; nothing is left held.
    expect((await holds(u.user.id)).filter((state) => state === 'pending')).toEqual([]);
    expect(await s.credits(u)).toBe(before - 300_000n);
    expect((await s.core.ledger.verify()).ok).toBe(true);
  });
});
