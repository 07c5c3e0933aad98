import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashRequest, Ledger, LedgerError, SIGNUP_CREDIT } from '@farebox/ledger';
import { accountId, openTestLedger, USD, type TestLedger } from './helpers.js';

// Processes sharing one database (migration 0012): each joins as an
// instance and beats; what a dead one held (its pending holds, its
// idempotency leases) comes back when a live one reaps it. Two Ledger objects
// on one database stand for two processes; time is moved by writing the
// instances' beat times back (the database's clock decides liveness).

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

// Each test starts with no instance: what one left is given back and the rows dropped.
afterEach(async () => {
  const sweeper = new Ledger(t.ledger.db);
  await sweeper.joinInstance('sweeper');
  await sweeper.reapDeadInstances({ timeoutMs: 1, sole: true });
  await t.ledger.db.query('DELETE FROM ledger_instances');
});

const TIMEOUT_MS = 10_000;
const body = { service: 'echo', payload: {} };

/** Moves an instance's last beat (and the start of its run of beats) `seconds` into the past. */
async function beatsAgo(ledger: Ledger, seconds: number): Promise<void> {
  await t.ledger.db.query(
    `UPDATE ledger_instances SET beat_at = now() - make_interval(secs => $2), alive_since = now() - make_interval(secs => $2 + 60) WHERE id = $1`,
    [ledger.instanceId, seconds],
  );
}

/** A live instance that has beaten steadily for a minute. */
async function steadyInstance(name: string): Promise<Ledger> {
  const ledger = new Ledger(t.ledger.db);
  await ledger.joinInstance(name);
  await beatsAgo(ledger, 0);
  return ledger;
}

/** A paid call under `key` on `ledger`: a hold with the key, then `finish` decides (never, for a process that dies). */
function keyedCall(ledger: Ledger, account: string, key: string, finish: Promise<'post' | 'fail'>) {
  let holdId: string | undefined;
  const done = ledger.withIdempotency(account, key, hashRequest(body), async () => {
    const { hold } = await ledger.hold(account, USD, { callId: key, service: 'echo', idempotencyKey: key });
    holdId = hold.id;
    if ((await finish) === 'fail') throw new Error('the process is gone');
    await ledger.post(hold.id, { publisherOwner: 'GPUB', service: 'echo', gross: USD });
    return { charged: true };
  });
  return { done, holdId: () => holdId };
}

describe('instances sharing a database', () => {
  it('stamps holds and leases with the instance that made them, in the same statement', async () => {
    const a = await steadyInstance('a');
    const id = accountId();
    await a.openAccount(id);
    const [one, two] = await Promise.all([a.hold(id, USD, { callId: 'c1', service: 'echo' }), a.hold(id, USD, { callId: 'c2', service: 'echo' })]);
    await a.hold(id, USD, { callId: 'c3', service: 'echo', idempotencyKey: 'k3' });
    await a.withIdempotency(id, 'k4', 'h', async () => 'ok');
    const holds = await t.ledger.db.query('SELECT DISTINCT instance_id FROM holds WHERE account_id = $1', [id]);
    expect(holds.rows).toEqual([{ instance_id: a.instanceId }]);
    const keys = await t.ledger.db.query('SELECT instance_id FROM idempotency_keys WHERE account_id = $1', [id]);
    expect(keys.rows).toEqual([{ instance_id: a.instanceId }]);
    expect([one.hold.state, two.hold.state]).toEqual(['pending', 'pending']);
    // A ledger that joined no instance stamps nothing.
    const plain = await t.ledger.hold(id, USD, { callId: 'c5', service: 'echo' });
    expect((await t.ledger.db.query('SELECT instance_id FROM holds WHERE id = $1', [plain.hold.id])).rows).toEqual([{ instance_id: null }]);
    await a.leaveInstance();
  });

  it("gives back a dead instance's holds and lease at once: the retry on a live one runs and is charged once", async () => {
    const dead = await steadyInstance('dies');
    const live = await steadyInstance('lives');
    const id = accountId();
    await live.openAccount(id);
    let gone!: (how: 'fail') => void;
    const call = keyedCall(dead, id, 'retry-me', new Promise((r) => (gone = r)));
    const keyless = await dead.hold(id, USD, { callId: 'keyless', service: 'echo' });
    const own = await live.hold(id, USD, { callId: 'own', service: 'echo' });
    const unowned = await t.ledger.hold(id, USD, { callId: 'unowned', service: 'echo' });
    await expect.poll(() => call.holdId()).toBeDefined();
    expect((await live.balance(id)).balance).toBe(SIGNUP_CREDIT - 4n * USD);

    // While the process runs, a retry is refused with the time its lease has left.
    const refused = await live.withIdempotency(id, 'retry-me', hashRequest(body), async () => 'ran').catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(LedgerError);
    expect(refused).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', data: { retryAfterSeconds: 60 } });
    // Its beats are 5 s old: not dead yet.
    await beatsAgo(dead, 5);
    expect(await live.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).toEqual({ instances: [], voided: [], released: 0 });

    // Its last beat is 11 s old: dead.
    await beatsAgo(dead, 11);
    const reaped = await live.reapDeadInstances({ timeoutMs: TIMEOUT_MS });
    expect(reaped.instances).toEqual([dead.instanceId]);
    expect(reaped.voided.sort()).toEqual([call.holdId(), keyless.hold.id].sort());
    expect(reaped.released).toBe(1);
    expect((await live.getHold(keyless.hold.id)).voidReason).toBe('its process stopped: voided by the reaper');
    expect((await live.getHold(own.hold.id)).state).toBe('pending');
    expect((await live.getHold(unowned.hold.id)).state).toBe('pending');
    expect((await t.ledger.db.query('SELECT 1 FROM ledger_instances WHERE id = $1', [dead.instanceId])).rows).toEqual([]);
    expect((await live.balance(id)).balance).toBe(SIGNUP_CREDIT - 2n * USD);

    // The retry under the same key runs now, on the live instance, and is charged once.
    const retry = await keyedCall(live, id, 'retry-me', Promise.resolve('post')).done;
    expect(retry).toEqual({ replayed: false, response: { charged: true } });
    // The dead attempt finishing late changes nothing: the retry's answer stands.
    gone('fail');
    await expect(call.done).rejects.toThrow('the process is gone');
    expect(await live.withIdempotency(id, 'retry-me', hashRequest(body), async () => 'again')).toEqual({ replayed: true, response: { charged: true } });
    await live.void(own.hold.id, 'test');
    await t.ledger.void(unowned.hold.id, 'test');
    expect((await live.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
    expect((await live.transactions(id)).filter((x) => x.type === 'call' && x.status === 'completed')).toHaveLength(1);
    expect((await live.verify()).mismatches).toEqual([]);
    // A second pass finds nothing more.
    expect(await live.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).toEqual({ instances: [], voided: [], released: 0 });
    await live.leaveInstance();
  });

  it('declares nobody dead until its own beats have run steadily for the timeout (after a database outage every beat is old)', async () => {
    const other = await steadyInstance('other');
    const back = await steadyInstance('back');
    const id = accountId();
    await other.openAccount(id);
    const held = await other.hold(id, USD, { callId: 'c', service: 'echo' });
    // Nobody could beat for 30 s; `back` beats first after the outage.
    await beatsAgo(other, 30);
    await beatsAgo(back, 30);
    expect(await back.beatInstance(TIMEOUT_MS, 'back')).toMatchObject({ rejoined: false, steady: false });
    expect((await back.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).instances).toEqual([]);
    expect((await other.getHold(held.hold.id)).state).toBe('pending');
    // `other` beats again: alive, and nothing of it was given back.
    expect(await other.beatInstance(TIMEOUT_MS, 'other')).toMatchObject({ instanceId: other.instanceId, rejoined: false });
    await t.ledger.db.query(`UPDATE ledger_instances SET alive_since = now() - interval '11 seconds' WHERE id = $1`, [back.instanceId]);
    expect((await back.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).instances).toEqual([]);
    expect((await other.getHold(held.hold.id)).state).toBe('pending');
    await other.void(held.hold.id, 'test');
    await other.leaveInstance();
    await back.leaveInstance();
  });

  it('joins again under a new id when it was declared dead, and stamps its new holds with it', async () => {
    const slow = await steadyInstance('slow');
    const judge = await steadyInstance('judge');
    const id = accountId();
    await slow.openAccount(id);
    const before = await slow.hold(id, USD, { callId: 'before', service: 'echo' });
    const old = slow.instanceId;
    await beatsAgo(slow, 20);
    expect((await judge.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).voided).toEqual([before.hold.id]);
    const beat = await slow.beatInstance(TIMEOUT_MS, 'slow');
    expect(beat).toMatchObject({ rejoined: true, steady: false });
    expect(beat.instanceId).not.toBe(old);
    const after = await slow.hold(id, USD, { callId: 'after', service: 'echo' });
    expect((await t.ledger.db.query('SELECT instance_id FROM holds WHERE id = $1', [after.hold.id])).rows).toEqual([{ instance_id: beat.instanceId }]);
    expect((await judge.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).voided).toEqual([]);
    await slow.void(after.hold.id, 'test');
    await slow.leaveInstance();
    await judge.leaveInstance();
  });

  it('gives back what an instance that left still held at the next pass, and with `sole` every other instance at once', async () => {
    const a = await steadyInstance('a');
    const b = await steadyInstance('b');
    const id = accountId();
    await a.openAccount(id);
    const left = await a.hold(id, USD, { callId: 'left', service: 'echo' });
    const fresh = await b.hold(id, USD, { callId: 'fresh', service: 'echo' });
    await a.leaveInstance();
    expect(a.instanceId).toBeNull();
    // A process that stopped cleanly: no wait for its beats to age.
    const c = await steadyInstance('c');
    expect((await c.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).voided).toEqual([left.hold.id]);
    // b beat a moment ago, yet a process alone on its database (embedded PGlite, restarted) knows it is gone.
    const restarted = new Ledger(t.ledger.db);
    await restarted.joinInstance('restarted');
    const r = await restarted.reapDeadInstances({ timeoutMs: TIMEOUT_MS, sole: true });
    expect(r.voided).toEqual([fresh.hold.id]);
    expect(r.instances.sort()).toEqual([b.instanceId, c.instanceId].sort());
    expect((await b.beatInstance(TIMEOUT_MS, 'b')).rejoined).toBe(true);
    expect((await restarted.balance(id)).balance).toBe(SIGNUP_CREDIT);
    expect((await restarted.verify()).mismatches).toEqual([]);
    await b.leaveInstance();
    await restarted.leaveInstance();
  });

  it('declares an instance its process knows to be gone (`gone`) dead at once, before its own beats are steady, once its beats stopped for goneAfterMs', async () => {
    const crashed = await steadyInstance('host-a pid 41');
    const elsewhere = await steadyInstance('host-b pid 41');
    const id = accountId();
    await crashed.openAccount(id);
    // A call under a key in flight when the process died: its hold and its lease.
    const call = keyedCall(crashed, id, 'k-crashed', new Promise(() => undefined));
    await expect.poll(() => call.holdId()).toBeDefined();
    const asked: string[] = [];
    const gone = ({ name }: { id: string; name: string }) => {
      asked.push(name);
      return name.startsWith('host-a ');
    };
    // The restarted process: just joined (not steady), its predecessor's beats stopped 3 s ago.
    const restarted = new Ledger(t.ledger.db);
    await restarted.joinInstance('host-a pid 42');
    await beatsAgo(crashed, 3);
    // Beats younger than goneAfterMs are not asked about.
    expect((await restarted.reapDeadInstances({ timeoutMs: TIMEOUT_MS, gone, goneAfterMs: 5_000 })).instances).toEqual([]);
    expect(asked).toEqual([]);
    const r = await restarted.reapDeadInstances({ timeoutMs: TIMEOUT_MS, gone, goneAfterMs: 2_000 });
    expect(r).toEqual({ instances: [crashed.instanceId], voided: [call.holdId()], released: 1 });
    expect(asked).toEqual(['host-a pid 41']);
    // Another host's instance with stopped beats is left to the timeout.
    await beatsAgo(elsewhere, 3);
    expect((await restarted.reapDeadInstances({ timeoutMs: TIMEOUT_MS, gone, goneAfterMs: 2_000 })).instances).toEqual([]);
    expect((await restarted.balance(id)).balance).toBe(SIGNUP_CREDIT);
    expect((await restarted.verify()).mismatches).toEqual([]);
    // The key's retry runs at once on the restarted process.
    expect(await restarted.withIdempotency(id, 'k-crashed', hashRequest(body), async () => 'ran')).toEqual({ replayed: false, response: 'ran' });
    await elsewhere.leaveInstance();
    await restarted.leaveInstance();
  });

  it("keeps a dead instance's lease while a wallet payment it may have sent is pending, but ends a top-up's own lease", async () => {
    const dead = await steadyInstance('wallet');
    const live = await steadyInstance('survivor');
    const id = accountId();
    await live.openAccount(id);
    let never!: (v: 'fail') => void;
    const stuck = new Promise<'fail'>((r) => (never = r));
    // A call paid from the wallet: the payment is recorded, its outcome on chain unknown.
    const walletCall = dead.withIdempotency(id, 'wallet-call', 'h1', async () => {
      await dead.recordWalletPayment(id, { kind: 'call', callId: 'call_w', amount: USD, service: 'echo', publisherOwner: 'GPUB' });
      await stuck;
      throw new Error('gone');
    });
    // A top-up under its key: its own payment (reference topup:key:<key>) is pending too.
    const topup = dead.withIdempotency(id, 'topup:t1', 'h2', async () => {
      await dead.recordWalletPayment(id, { kind: 'topup', callId: 'topup:key:t1', amount: USD });
      await stuck;
      throw new Error('gone');
    });
    await expect.poll(async () => (await t.ledger.db.query('SELECT 1 FROM wallet_payments WHERE account_id = $1', [id])).rows.length).toBe(2);
    await beatsAgo(dead, 11);
    const reaped = await live.reapDeadInstances({ timeoutMs: TIMEOUT_MS });
    expect(reaped).toMatchObject({ instances: [dead.instanceId] });
    const leases = await t.ledger.db.query(`SELECT key, locked_until > now() AS leased FROM idempotency_keys WHERE account_id = $1 ORDER BY key`, [id]);
    // The top-up's retry finishes that same payment; the call's retry would pay again, so its lease runs its time.
    expect(leases.rows).toEqual([
      { key: 'topup:t1', leased: false },
      { key: 'wallet-call', leased: true },
    ]);
    never('fail');
    const ended = await Promise.allSettled([walletCall, topup]);
    expect(ended.map((e) => e.status === 'rejected' && (e.reason as Error).message)).toEqual(['gone', 'gone']);
    await live.leaveInstance();
  });

  it('refuses bad options with an exact message and changes nothing', async () => {
    const plain = new Ledger(t.ledger.db);
    await expect(plain.reapDeadInstances({ timeoutMs: TIMEOUT_MS })).rejects.toThrow('the ledger joined no instance (joinInstance)');
    await expect(plain.beatInstance(TIMEOUT_MS, 'x')).rejects.toThrow('the ledger joined no instance (joinInstance)');
    const a = await steadyInstance('opts');
    await expect(a.reapDeadInstances({ timeoutMs: 0 })).rejects.toThrow('timeoutMs must be an integer from 1 to 86400000');
    await expect(a.reapDeadInstances({ timeoutMs: TIMEOUT_MS, sole: 'yes' as unknown as boolean })).rejects.toThrow('sole must be a boolean');
    await expect(a.joinInstance('')).rejects.toThrow('name required');
    await a.leaveInstance();
  });
});
