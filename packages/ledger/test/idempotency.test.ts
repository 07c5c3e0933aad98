import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, testClock } from '@farebox/test-kit';
import { hashRequest, Ledger, LedgerError, SIGNUP_CREDIT } from '@farebox/ledger';
import { accountId, openTestLedger, USD, type TestLedger } from './helpers.js';

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

interface CallResponse {
  status: number;
  body: { result?: unknown; error?: string; cost?: number };
}

/** The gateway's call path in miniature: hold, call, post or void, under an idempotency key. */
function paidCall(
  ledger: Ledger,
  account: string,
  key: string,
  body: { service: string; payload: unknown },
  upstream: () => Promise<unknown>,
  leaseMs?: number,
) {
  let runs = 0;
  const run = () =>
    ledger.withIdempotency<CallResponse>(
      account,
      key,
      hashRequest(body),
      async () => {
        runs += 1;
        const { hold } = await ledger.hold(account, USD, { callId: key, service: body.service, idempotencyKey: key });
        try {
          const result = await upstream();
          await ledger.post(hold.id, { publisherOwner: 'GPUB', service: body.service, gross: USD });
          return { status: 200, body: { result, cost: Number(USD) } };
        } catch (error) {
          await ledger.void(hold.id, (error as Error).message);
          return { status: 500, body: { error: (error as Error).message } };
        }
      },
      leaseMs === undefined ? {} : { leaseMs },
    );
  return { run, runs: () => runs };
}

/** A crashed attempt of `paidCall` for `{ service: 'echo', payload: {} }`: its key in progress past its lease, its hold pending, nothing else. */
async function crashedAttempt(account: string, key: string) {
  await t.ledger.db.query(
    `INSERT INTO idempotency_keys (account_id, key, request_hash, state, locked_until) VALUES ($1, $2, $3, 'in_progress', now() - interval '1 second')`,
    [account, key, hashRequest({ service: 'echo', payload: {} })],
  );
  return t.ledger.hold(account, USD, { callId: key, service: 'echo', idempotencyKey: key });
}

describe('withIdempotency', () => {
  it('charges once and replays the first response on retry', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const call = paidCall(t.ledger, id, 'key-1', { service: 'echo', payload: { a: 1 } }, async () => ({ echoed: 1 }));
    const first = await call.run();
    const second = await call.run();
    expect(first).toEqual({ replayed: false, response: { status: 200, body: { result: { echoed: 1 }, cost: Number(USD) } } });
    expect(second).toEqual({ replayed: true, response: first.response });
    expect(call.runs()).toBe(1);
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
  });

  it('treats the same body in another key order as the same request', () => {
    expect(hashRequest({ service: 's', payload: { x: 1, y: [1, { b: 2, a: 1 }] } })).toBe(
      hashRequest({ payload: { y: [1, { a: 1, b: 2 }], x: 1 }, service: 's' }),
    );
    expect(hashRequest({ service: 's', payload: { x: 1 } })).not.toBe(hashRequest({ service: 's', payload: { x: 2 } }));
  });

  it('refuses the same key with a different body and charges nothing more', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    await paidCall(t.ledger, id, 'key-2', { service: 'echo', payload: { a: 1 } }, async () => 'ok').run();
    const other = paidCall(t.ledger, id, 'key-2', { service: 'echo', payload: { a: 2 } }, async () => 'ok');
    const error = await other.run().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerError);
    expect(error).toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
    expect(other.runs()).toBe(0);
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
  });

  it('stores a refunded failure and replays it without a second charge or refund', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const call = paidCall(t.ledger, id, 'key-3', { service: 'down', payload: {} }, async () => {
      throw new Error('upstream 502');
    });
    const first = await call.run();
    expect(first.response).toEqual({ status: 500, body: { error: 'upstream 502' } });
    expect(await call.run()).toEqual({ replayed: true, response: first.response });
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT);
    expect((await t.ledger.transactions(id)).filter((x) => x.type === 'call').map((x) => x.status)).toEqual(['refunded']);
  });

  it('refuses a concurrent duplicate with IDEMPOTENCY_IN_PROGRESS while the first runs, then replays', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running!: () => void;
    const upstreamStarted = new Promise<void>((r) => (running = r));
    const call = paidCall(t.ledger, id, 'key-4', { service: 'slow', payload: {} }, async () => {
      running();
      await gate;
      return 'done';
    });
    const first = call.run();
    // The first attempt holds the key (it is calling upstream).
    await upstreamStarted;
    const duplicates = await Promise.allSettled([call.run(), call.run(), call.run()]);
    for (const d of duplicates) {
      expect(d.status).toBe('rejected');
      expect((d as PromiseRejectedResult).reason).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS' });
    }
    release();
    expect((await first).replayed).toBe(false);
    expect((await call.run()).replayed).toBe(true);
    expect(call.runs()).toBe(1);
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
  });

  it('lets a duplicate wait for the first response when waitMs is given', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running!: () => void;
    const started = new Promise<void>((r) => (running = r));
    const fn = async () => {
      runs += 1;
      running();
      await gate;
      return { n: runs };
    };
    const first = t.ledger.withIdempotency(id, 'key-5', 'h', fn);
    await started;
    // While the first runs: a duplicate that may wait, and one that may not (refused, so the key is in progress).
    const waiting = t.ledger.withIdempotency(id, 'key-5', 'h', fn, { waitMs: 10_000 });
    await expect(t.ledger.withIdempotency(id, 'key-5', 'h', fn)).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS' });
    release();
    const [a, b] = await Promise.all([first, waiting]);
    expect(runs).toBe(1);
    expect(a).toEqual({ replayed: false, response: { n: 1 } });
    expect(b).toEqual({ replayed: true, response: { n: 1 } });
  });

  it('releases the key when the attempt throws, so a retry runs again', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    await expect(t.ledger.withIdempotency(id, 'key-6', 'h', async () => Promise.reject(new Error('bad gateway config')))).rejects.toThrow('bad gateway config');
    expect(await t.ledger.withIdempotency(id, 'key-6', 'h', async () => 'second')).toEqual({ replayed: false, response: 'second' });
  });

  it('keeps the key of an attempt whose outcome comes later, and stores that outcome for the retry', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    let settle!: (r: { n: number } | undefined) => void;
    const outcome = new Promise<{ n: number } | undefined>((r) => (settle = r));
    await expect(
      t.ledger.withIdempotency<{ n: number }>(id, 'key-later', 'h', async (claim) => {
        claim.later(outcome);
        throw new Error('charge pending');
      }),
    ).rejects.toThrow('charge pending');
    // Until the outcome is known, a retry is told the key is in use, and does not run.
    let ran = 0;
    const retry = () => t.ledger.withIdempotency(id, 'key-later', 'h', async () => ({ n: ++ran }));
    await expect(retry()).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS' });
    settle({ n: 7 });
    await outcome;
    await eventually('the outcome is stored', async () => (await retry().catch(() => undefined))?.replayed === true);
    expect(await retry()).toEqual({ replayed: true, response: { n: 7 } });
    expect(ran).toBe(0);
  });

  it('releases the key of an attempt whose later outcome is none, so a retry runs again', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const outcomes = [() => Promise.resolve(undefined), () => Promise.reject(new Error('gave up'))];
    for (const [i, made] of outcomes.entries()) {
      const key = `key-none-${i}`;
      await expect(
        t.ledger.withIdempotency(id, key, 'h', async (claim) => {
          claim.later(made());
          throw new Error('charge pending');
        }),
      ).rejects.toThrow('charge pending');
      await eventually(
        'the key is released',
        async () => (await t.ledger.withIdempotency(id, key, 'h', async () => 'ran again').catch(() => undefined))?.response === 'ran again',
      );
    }
  });

  it("answers fn's response when the database refuses to store it, and stores it as soon as it can", async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    // The first write of this key's answer fails, as a statement cut by a lost connection does (a sequence: it counts
    // across the failed statement's rollback).
    await t.ledger.db.query(`CREATE SEQUENCE idem_cut_seq`);
    await t.ledger.db.query(`CREATE FUNCTION idem_cut_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.key = 'key-cut' AND NEW.state = 'completed' AND nextval('idem_cut_seq') = 1 THEN
          RAISE EXCEPTION 'the connection was lost';
        END IF;
        RETURN NEW;
      END $$`);
    await t.ledger.db.query(`CREATE TRIGGER idem_cut BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION idem_cut_once()`);
    try {
      let ran = 0;
      const call = () => t.ledger.withIdempotency(id, 'key-cut', 'h', async () => ({ n: ++ran }));
      expect(await call()).toEqual({ replayed: false, response: { n: 1 } });
      // Stored in the background: a retry is told the key is in use until then (it does not run), then gets the first answer.
      await eventually('the answer is stored', async () => (await call().catch(() => undefined))?.replayed === true, { timeoutMs: 5_000 });
      expect(await call()).toEqual({ replayed: true, response: { n: 1 } });
      expect(ran).toBe(1);
    } finally {
      await t.ledger.db.query(`DROP TRIGGER idem_cut ON idempotency_keys`);
      await t.ledger.db.query(`DROP FUNCTION idem_cut_once(); DROP SEQUENCE idem_cut_seq`);
    }
  });

  it('takes over an attempt that crashed after its hold, reusing that hold instead of charging twice', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const crashed = await crashedAttempt(id, 'key-7');
    const call = paidCall(t.ledger, id, 'key-7', { service: 'echo', payload: {} }, async () => 'served');
    const result = await call.run();
    expect(result.response.status).toBe(200);
    expect((await t.ledger.getHold(crashed.hold.id)).state).toBe('posted');
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
    expect((await t.ledger.verify()).mismatches).toEqual([]);
  });

  it('takes over a crashed attempt whose hold took the last credits: the hold is reused, not refused for credits', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const crashed = await crashedAttempt(id, 'key-8');
    await t.ledger.hold(id, SIGNUP_CREDIT - USD, { callId: 'other', service: 'echo' });
    expect((await t.ledger.balance(id)).balance).toBe(0n);
    const call = paidCall(t.ledger, id, 'key-8', { service: 'echo', payload: {} }, async () => 'served');
    const result = await call.run();
    expect(result.response.status).toBe(200);
    expect((await t.ledger.getHold(crashed.hold.id)).state).toBe('posted');
    expect((await t.ledger.verify()).mismatches).toEqual([]);
  });
});

// The lease and the waits by the host's clock (LedgerOptions.now): a ledger on the same database whose clock the test
// moves. The lease is stamped and compared by the database's time moved by that clock's lead, so a test moves time
// instead of waiting a minute.
describe('withIdempotency on the host’s clock', () => {
  it('refuses a retry while the attempt’s lease lasts by the clock, with the seconds left, then takes the key over and reuses its hold', async () => {
    const clock = testClock();
    const ledger = new Ledger(t.ledger.db, { now: clock.now });
    const id = accountId();
    await ledger.openAccount(id);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let arrived!: () => void;
    const atService = new Promise<void>((r) => (arrived = r));
    let upstreamCalls = 0;
    // The first attempt's service hangs (its gateway stalled); the retry's answers at once.
    const call = paidCall(
      ledger,
      id,
      'key-clock-lease',
      { service: 'echo', payload: {} },
      async () => {
        upstreamCalls += 1;
        if (upstreamCalls === 1) {
          arrived();
          await gate;
        }
        return `served ${upstreamCalls}`;
      },
      60_000,
    );
    const first = call.run();
    await atService;
    await expect(call.run()).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', data: { retryAfterSeconds: 60 } });
    clock.advance(45_000);
    await expect(call.run()).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', data: { retryAfterSeconds: 15 } });
    expect(call.runs()).toBe(1);
    // Past the lease by the clock: the retry takes the key over at once (no minute waited), on the first attempt's hold.
    clock.advance(15_001);
    const retried = await call.run();
    expect(retried).toEqual({ replayed: false, response: { status: 200, body: { result: 'served 2', cost: Number(USD) } } });
    expect(call.runs()).toBe(2);
    // The stalled attempt ends later: its answer is the one on record, and nothing is charged twice.
    release();
    expect(await first).toEqual({ replayed: true, response: retried.response });
    const { rows } = await t.ledger.db.query<{ state: string }>('SELECT state FROM holds WHERE account_id = $1', [id]);
    expect(rows.map((r) => r.state)).toEqual(['posted']);
    expect((await ledger.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('lets a duplicate wait for the first attempt no longer than its waitMs by the clock', async () => {
    const clock = testClock();
    const ledger = new Ledger(t.ledger.db, { now: clock.now });
    const id = accountId();
    await ledger.openAccount(id);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running!: () => void;
    const started = new Promise<void>((r) => (running = r));
    const first = ledger.withIdempotency(id, 'key-clock-wait', 'h', async () => {
      running();
      await gate;
      return 'first';
    });
    await started;
    // A duplicate that may wait ten minutes gives up as soon as the clock passes its wait (not ten minutes later),
    // told the key is still in progress; its own fn never runs.
    const waiting = ledger.withIdempotency(id, 'key-clock-wait', 'h', async () => 'duplicate', { waitMs: 600_000 });
    clock.advance(600_000);
    await expect(waiting).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS' });
    release();
    expect(await first).toEqual({ replayed: false, response: 'first' });
  });
});
