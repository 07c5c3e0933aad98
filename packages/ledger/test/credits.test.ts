import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BALANCE_CAP, Ledger, LedgerError, SIGNUP_CREDIT, TOPUP_MAX, migrateLedger, parseTopupAmount } from '@farebox/ledger';
import { accountId, openLedgerAt, openTestLedger, USD, type TestLedger, migrationsAfter } from './helpers.js';
import { eventually, testClock } from '@farebox/test-kit';

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

async function rejection(promise: Promise<unknown>): Promise<LedgerError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LedgerError);
  return error as LedgerError;
}

describe('sign-up credit', () => {
  it('gives a new account 5 USD once, also when opened again concurrently', async () => {
    const id = accountId();
    const results = await Promise.all(Array.from({ length: 10 }, () => t.ledger.openAccount(id)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT);
    const again = await t.ledger.openAccount(id);
    expect(again).toMatchObject({ created: false, balance: 50_000_000n });
    const txs = await t.ledger.transactions(id);
    expect(txs).toHaveLength(1);
    expect(txs[0]).toMatchObject({ type: 'topup', amount: SIGNUP_CREDIT, status: 'completed', note: 'signup' });
  });
});

describe('top-ups', () => {
  it('refuses 0, negative and more than 1000 USD with the spec message and changes nothing', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    for (const amount of [0n, -1n, TOPUP_MAX + 1n]) {
      const error = await rejection(t.ledger.topup(id, amount));
      expect(error.code).toBe('INVALID_AMOUNT');
      expect(error.message).toBe('invalid amount (must be 0 < n <= 1000)');
    }
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT);
    expect(await t.ledger.transactions(id)).toHaveLength(1);
  });

  it('parses USD amounts at the edge with the same limits', () => {
    expect(parseTopupAmount(1000)).toBe(TOPUP_MAX);
    expect(parseTopupAmount('0.0000001')).toBe(1n);
    for (const bad of [0, -1, 1000.01, 'abc', Number.NaN, null, '1e3x']) {
      expect(() => parseTopupAmount(bad)).toThrow('invalid amount (must be 0 < n <= 1000)');
    }
  });

  it('accepts exactly 1000 USD and caps aggregated credits (balance + holds) at 10,000 USD', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    for (let i = 0; i < 9; i++) await t.ledger.topup(id, TOPUP_MAX);
    // 9,005 USD now; 995 more reaches the cap exactly.
    const atCap = await t.ledger.topup(id, 995n * USD);
    expect(atCap.aggregated).toBe(BALANCE_CAP);
    const over = await rejection(t.ledger.topup(id, 1n));
    expect(over.code).toBe('BALANCE_CAP_EXCEEDED');
    expect(over.message).toBe('balance cap exceeded (max $10000)');
    // Money in a pending hold still counts; once posted (spent) it does not.
    const { hold } = await t.ledger.hold(id, 100n * USD, { callId: 'c', service: 'svc' });
    await rejection(t.ledger.topup(id, 1n));
    await t.ledger.post(hold.id, { publisherOwner: 'GPUB', service: 'svc', gross: 100n * USD });
    const after = await t.ledger.topup(id, 100n * USD);
    expect(after.aggregated).toBe(BALANCE_CAP);
    expect((await t.ledger.verify()).mismatches).toEqual([]);
  });

  it('never lets concurrent top-ups pass the cap together', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    for (let i = 0; i < 9; i++) await t.ledger.topup(id, TOPUP_MAX);
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => t.ledger.topup(id, 100n * USD)));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(9);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'BALANCE_CAP_EXCEEDED' });
    // 9,005 USD + 9 x 100 USD: the tenth would pass 10,000.
    expect((await t.ledger.balance(id)).balance).toBe(9_905n * USD);
  });

  it('refuses a top-up to an unknown account', async () => {
    const error = await rejection(t.ledger.topup(accountId('ghost'), USD));
    expect(error.code).toBe('ACCOUNT_NOT_FOUND');
  });
});

describe('holds', () => {
  it('lets exactly 50 of 200 parallel holds through when the account can afford 50, never overdrawing', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const price = SIGNUP_CREDIT / 50n;
    const results = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => t.ledger.hold(id, price, { callId: `call-${i}`, service: 'svc' })));
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(ok).toHaveLength(50);
    expect(refused).toHaveLength(150);
    for (const r of refused) expect(r.reason).toMatchObject({ code: 'INSUFFICIENT_BALANCE', message: 'insufficient balance' });
    const balances = ok.map((r) => (r as PromiseFulfilledResult<{ balance: bigint }>).value.balance);
    expect(balances.every((b) => b >= 0n)).toBe(true);
    expect(await t.ledger.balance(id)).toMatchObject({ balance: 0n, held: SIGNUP_CREDIT });
    const { rows } = await t.ledger.db.query('SELECT sum(delta_balance) AS s FROM journal WHERE account_id = $1', [id]);
    expect(BigInt(rows[0]?.s as string)).toBe(0n);
    expect((await t.ledger.verify()).mismatches).toEqual([]);
  });

  it('refuses a hold on an unknown account and a non-positive amount', async () => {
    expect((await rejection(t.ledger.hold(accountId('ghost'), 1n, { callId: 'c', service: 's' }))).code).toBe('ACCOUNT_NOT_FOUND');
    const id = accountId();
    await t.ledger.openAccount(id);
    expect((await rejection(t.ledger.hold(id, 0n, { callId: 'c', service: 's' }))).code).toBe('INVALID_AMOUNT');
    expect((await rejection(t.ledger.hold(id, -5n, { callId: 'c', service: 's' }))).code).toBe('INVALID_AMOUNT');
    expect((await rejection(t.ledger.hold(id, 1n, { callId: '', service: 's' }))).code).toBe('INVALID_INPUT');
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT);
  });

  it('returns the live hold for a repeated idempotency key instead of debiting twice', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const attempts = await Promise.all(Array.from({ length: 8 }, () => t.ledger.hold(id, USD, { callId: 'c', service: 's', idempotencyKey: 'k1' })));
    expect(new Set(attempts.map((a) => a.hold.id)).size).toBe(1);
    expect(attempts.filter((a) => !a.replayed)).toHaveLength(1);
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT - USD);
    // After a void (money returned) the key may carry a new attempt.
    await t.ledger.void(attempts[0]!.hold.id, 'service failed');
    const retry = await t.ledger.hold(id, USD, { callId: 'c2', service: 's', idempotencyKey: 'k1' });
    expect(retry.replayed).toBe(false);
    expect(retry.hold.id).not.toBe(attempts[0]!.hold.id);
  });

  it('posts or voids a hold at most once under concurrent attempts', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    for (let round = 0; round < 5; round++) {
      const { hold } = await t.ledger.hold(id, USD / 10n, { callId: `c${round}`, service: 'svc' });
      const attempts = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          i % 2 === 0 ? t.ledger.post(hold.id, { publisherOwner: 'GPUB', service: 'svc', gross: USD / 10n }) : t.ledger.void(hold.id, 'failed'),
        ),
      );
      const applied = attempts.filter((a) => a.applied);
      expect(applied).toHaveLength(1);
      const final = applied[0]!.hold.state;
      for (const a of attempts) expect(a.hold.state).toBe(final);
      const { rows } = await t.ledger.db.query('SELECT count(*) AS n FROM earnings WHERE hold_id = $1', [hold.id]);
      expect(Number(rows[0]?.n)).toBe(final === 'posted' ? 1 : 0);
    }
    const report = await t.ledger.verify();
    expect(report.mismatches).toEqual([]);
  });

  it('records gross, the 5% fee rounded down and net when posting, returning any unused part of the hold', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const { hold } = await t.ledger.hold(id, 1_000n, { callId: 'c', service: 'svc' });
    const posted = await t.ledger.post(hold.id, { publisherOwner: 'GPUB2', service: 'svc', gross: 999n });
    expect(posted.earning).toMatchObject({ gross: 999n, fee: 49n, net: 950n, publisherOwner: 'GPUB2' });
    expect(posted.balance).toBe(SIGNUP_CREDIT - 999n);
    const again = await t.ledger.post(hold.id, { publisherOwner: 'GPUB2', service: 'svc', gross: 999n });
    expect(again).toMatchObject({ applied: false, balance: SIGNUP_CREDIT - 999n });
    expect(again.earning?.id).toBe(posted.earning?.id);
    const tooMuch = await t.ledger.hold(id, 10n, { callId: 'c2', service: 'svc' });
    expect((await rejection(t.ledger.post(tooMuch.hold.id, { publisherOwner: 'GPUB2', service: 'svc', gross: 11n }))).code).toBe('INVALID_AMOUNT');
    expect((await t.ledger.getHold(tooMuch.hold.id)).state).toBe('pending');
  });

  it('voids a hold back into credits (a refund) and reports HOLD_NOT_FOUND for unknown ids', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const { hold } = await t.ledger.hold(id, 3n * USD, { callId: 'c', service: 'svc' });
    const voided = await t.ledger.void(hold.id, 'upstream 500');
    expect(voided).toMatchObject({ applied: true, balance: SIGNUP_CREDIT });
    expect(voided.hold).toMatchObject({ state: 'voided', voidReason: 'upstream 500' });
    expect((await t.ledger.void(hold.id, 'again')).applied).toBe(false);
    expect((await rejection(t.ledger.void('00000000-0000-0000-0000-000000000000', 'x'))).code).toBe('HOLD_NOT_FOUND');
    expect((await rejection(t.ledger.void('not-a-uuid', 'x'))).code).toBe('HOLD_NOT_FOUND');
  });
});

describe('reaper', () => {
  it('voids holds past their timeout, concurrently from several reapers, and leaves the balance whole', async () => {
    // A ledger on the same database whose clock the test moves: holds' expiry moves with it.
    const clock = testClock();
    const ledger = new Ledger(t.ledger.db, { now: clock.now });
    const id = accountId();
    await ledger.openAccount(id);
    const held = await Promise.all(Array.from({ length: 6 }, (_, i) => ledger.hold(id, USD / 2n, { callId: `c${i}`, service: 'svc', timeoutMs: 60_000 })));
    const fresh = await ledger.hold(id, USD / 2n, { callId: 'fresh', service: 'svc', timeoutMs: 600_000 });
    // Not yet: every hold is younger than its timeout.
    expect((await ledger.reapExpiredHolds()).voided.filter((h) => [...held.map((x) => x.hold.id), fresh.hold.id].includes(h))).toEqual([]);
    clock.advance(60_001);
    const runs = await Promise.all([ledger.reapExpiredHolds(), ledger.reapExpiredHolds(), ledger.reapExpiredHolds()]);
    const voided = runs.flatMap((r) => r.voided);
    expect(new Set(voided).size).toBe(voided.length);
    expect(voided.sort()).toEqual(held.map((h) => h.hold.id).sort());
    expect(await ledger.balance(id)).toMatchObject({ balance: SIGNUP_CREDIT - USD / 2n, held: USD / 2n });
    // With olderThanMs every pending hold placed longer ago than that (by the database's clock) goes too.
    const second = await eventually('the fresh hold is older than 1 ms', async () => {
      const r = await ledger.reapExpiredHolds(1);
      return r.voided.includes(fresh.hold.id) ? r : undefined;
    });
    expect(second.voided).toContain(fresh.hold.id);
    expect(await ledger.balance(id)).toMatchObject({ balance: SIGNUP_CREDIT, held: 0n });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });
});

describe('transactions view', () => {
  it('lists top-ups and calls newest first with their status', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    await t.ledger.topup(id, 2n * USD, { reference: 'dashboard' });
    const a = await t.ledger.hold(id, USD, { callId: 'a', service: 'alpha' });
    await t.ledger.post(a.hold.id, { publisherOwner: 'GP', service: 'alpha', gross: USD });
    const b = await t.ledger.hold(id, USD, { callId: 'b', service: 'beta' });
    await t.ledger.void(b.hold.id, 'failed');
    await t.ledger.hold(id, USD, { callId: 'c', service: 'gamma' });
    const txs = await t.ledger.transactions(id, 10);
    expect(txs.map((x) => [x.type, x.service, x.status])).toEqual([
      ['call', 'gamma', 'pending'],
      ['call', 'beta', 'refunded'],
      ['call', 'alpha', 'completed'],
      ['topup', null, 'completed'],
      ['topup', null, 'completed'],
    ]);
    expect(txs[3]).toMatchObject({ amount: 2n * USD, note: 'dashboard', txSignature: null, explorerUrl: null });
    expect(await t.ledger.transactions(id, 2)).toHaveLength(2);
    expect((await rejection(t.ledger.transactions(id, 501))).code).toBe('INVALID_INPUT');
    expect((await rejection(t.ledger.transactions(id, 0))).code).toBe('INVALID_INPUT');
  });
});

describe('journal', () => {
  it('refuses UPDATE, DELETE and TRUNCATE', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    for (const sql of [`UPDATE journal SET amount = 1 WHERE account_id = '${id}'`, `DELETE FROM journal WHERE account_id = '${id}'`, 'TRUNCATE journal']) {
      await expect(t.ledger.db.query(sql)).rejects.toThrow(/append-only/);
    }
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT);
  });

  it('keeps every account and hold the journal names: no DELETE, TRUNCATE or change of key', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const { hold } = await t.ledger.hold(id, USD, { callId: 'kept', service: 'svc' });
    for (const sql of [
      `DELETE FROM accounts WHERE id = '${id}'`,
      'TRUNCATE accounts CASCADE',
      `DELETE FROM holds WHERE id = '${hold.id}'`,
      'TRUNCATE holds CASCADE',
      `UPDATE accounts SET id = 'someone-else' WHERE id = '${id}'`,
      `UPDATE holds SET account_id = 'someone-else' WHERE id = '${hold.id}'`,
    ]) {
      await expect(t.ledger.db.query(sql), sql).rejects.toThrow(/referenced by the journal|never changes/);
    }
    await t.ledger.void(hold.id, 'done');
    expect((await t.ledger.balance(id)).balance).toBe(SIGNUP_CREDIT);
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it('lets verify() find a journal row, hold or earning that names a missing row', async () => {
    const own = await openTestLedger();
    try {
      const id = accountId();
      await own.ledger.openAccount(id);
      const { hold } = await own.ledger.hold(id, USD, { callId: 'ref', service: 'svc' });
      await own.ledger.post(hold.id, { publisherOwner: 'GPUBLISHER', service: 'svc', gross: USD });
      expect((await own.ledger.verify()).ok).toBe(true);
      // Written by hand, past the ledger's statements: a top-up to no account, a post of no hold.
      await own.ledger.db.query(
        `INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, reference) VALUES ('ghost', 'topup', 1, 1, 0, 'by hand')`,
      );
      await own.ledger.db.query(
        `INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id) VALUES ($1, 'void', 1, 0, 0, '00000000-0000-4000-8000-000000000000')`,
        [id],
      );
      const report = await own.ledger.verify();
      expect(report.ok).toBe(false);
      const refs = report.mismatches.filter((m) => m.kind === 'reference');
      expect(refs.map((m) => m.expected).sort()).toEqual(['journal.account_id names an existing row', 'journal.hold_id names an existing row']);
      expect(refs.map((m) => m.actual).sort()).toEqual(['no row 00000000-0000-4000-8000-000000000000', 'no row ghost']);
    } finally {
      await own.dispose();
    }
  });

  it('lets verify() find a balance that no longer matches the journal', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    await t.ledger.db.query('UPDATE accounts SET balance = balance + 1 WHERE id = $1', [id]);
    const report = await t.ledger.verify();
    expect(report.ok).toBe(false);
    expect(report.mismatches).toContainEqual({ kind: 'balance', id, expected: String(SIGNUP_CREDIT), actual: String(SIGNUP_CREDIT + 1n) });
    await t.ledger.db.query('UPDATE accounts SET balance = balance - 1 WHERE id = $1', [id]);
    expect((await t.ledger.verify()).ok).toBe(true);
  });
});

describe('hold ids', () => {
  /** The Unix milliseconds in a version-7 id's first 48 bits. */
  const idTime = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
  const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('are time-ordered (UUIDv7): one by one, with a key and in a batch, led by the time each hold was placed', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const before = Date.now();
    const lone = await t.ledger.hold(id, 1n, { callId: 'v7-lone', service: 'svc' });
    const keyed = await t.ledger.hold(id, 1n, { callId: 'v7-keyed', service: 'svc', idempotencyKey: 'v7-key' });
    // The database's clock moves past the first two ids' millisecond before the burst.
    const firstTwo = Math.max(idTime(lone.hold.id), idTime(keyed.hold.id));
    await eventually(
      'the database’s clock is past the first holds',
      async () => Number((await t.ledger.db.query<{ ms: string }>('SELECT floor(extract(epoch FROM clock_timestamp()) * 1000) AS ms')).rows[0]!.ms) > firstTwo,
      { intervalMs: 1 },
    );
    const burst = await Promise.all([1, 2, 3, 4].map((n) => t.ledger.hold(id, 1n, { callId: `v7-burst-${n}`, service: 'svc' })));
    const after = Date.now();
    const holds = [lone, keyed, ...burst].map((r) => r.hold);
    for (const hold of holds) {
      expect(hold.id).toMatch(V7);
      // The database's clock and this process's are the same machine's here.
      expect(idTime(hold.id)).toBeGreaterThanOrEqual(before - 1_000);
      expect(idTime(hold.id)).toBeLessThanOrEqual(after + 1_000);
    }
    // Placed 5 ms apart: the burst's ids sort after the first two.
    const [first, second, ...rest] = holds.map((h) => idTime(h.id));
    for (const later of rest) expect(later).toBeGreaterThan(Math.max(first!, second!));
    expect(new Set(holds.map((h) => h.id)).size).toBe(6);
  });

  it('placed before the upgrade keep their ids, and post and void as before', async () => {
    const { db, dispose } = await openLedgerAt(7);
    try {
      const ledger = new Ledger(db);
      const id = accountId();
      await ledger.openAccount(id);
      const old = await Promise.all([1, 2, 3].map((n) => ledger.hold(id, USD, { callId: `old-${n}`, service: 'svc' })));
      for (const r of old) expect(r.hold.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/);
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(7));
      const [a, b, c] = old.map((r) => r.hold.id) as [string, string, string];
      expect((await ledger.post(a, { publisherOwner: 'GUPGRADE', service: 'svc', gross: USD })).hold).toMatchObject({ id: a, state: 'posted' });
      expect((await ledger.void(b, 'after the upgrade')).hold).toMatchObject({ id: b, state: 'voided' });
      const fresh = await ledger.hold(id, USD, { callId: 'new', service: 'svc' });
      expect(fresh.hold.id).toMatch(V7);
      expect(await ledger.getHold(c)).toMatchObject({ id: c, state: 'pending' });
      // 5 USD - 4 held + 1 voided back = 2; 2 held (c and the new one); 1 posted.
      expect(await ledger.balance(id)).toMatchObject({ balance: 2n * USD, held: 2n * USD });
      expect((await ledger.verify()).mismatches).toEqual([]);
    } finally {
      await dispose();
    }
  });
});

describe('an account journal indexed for its credits only (schema version 9)', () => {
  it('lists the credits and calls written before the upgrade, and a top-up replay still finds its first', async () => {
    const { db, dispose } = await openLedgerAt(8);
    try {
      const ledger = new Ledger(db);
      const id = accountId();
      await ledger.openAccount(id);
      expect((await ledger.topup(id, 2n * USD, { reference: 'wallet:before', once: true })).applied).toBe(true);
      const { hold } = await ledger.hold(id, USD, { callId: 'before', service: 'svc' });
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(8));
      // Posted after the upgrade: today's post statement keeps a credential budget's row (schema 13), which a
      // schema-8 database does not have.
      await ledger.post(hold.id, { publisherOwner: 'GUPGRADE', service: 'svc', gross: USD });

      // The same reference again, before and after a new top-up: credited once.
      expect((await ledger.topup(id, 2n * USD, { reference: 'wallet:before', once: true })).applied).toBe(false);
      expect((await ledger.topup(id, 3n * USD, { reference: 'wallet:after', once: true })).applied).toBe(true);
      expect((await ledger.topup(id, 3n * USD, { reference: 'wallet:after', once: true })).applied).toBe(false);
      const again = await ledger.hold(id, USD, { callId: 'after', service: 'svc' });
      await ledger.post(again.hold.id, { publisherOwner: 'GUPGRADE', service: 'svc', gross: USD });

      const list = await ledger.transactions(id);
      expect(list.map((t) => [t.type, t.amount, t.status, t.note])).toEqual([
        ['call', USD, 'completed', null],
        ['topup', 3n * USD, 'completed', 'wallet:after'],
        ['call', USD, 'completed', null],
        ['topup', 2n * USD, 'completed', 'wallet:before'],
        ['topup', SIGNUP_CREDIT, 'completed', 'signup'],
      ]);
      // 5 sign-up + 2 + 3 - 1 - 1.
      expect(await ledger.balance(id)).toMatchObject({ balance: 8n * USD, held: 0n });
      expect((await ledger.verify()).mismatches).toEqual([]);
    } finally {
      await dispose();
    }
  });

  it('upgrades a ledger whose operator built the credits index beforehand (docs/deploy.md)', async () => {
    const { db, dispose } = await openLedgerAt(8);
    try {
      const ledger = new Ledger(db);
      const id = accountId();
      await ledger.openAccount(id);
      await db.query(`CREATE INDEX IF NOT EXISTS journal_credits ON journal (account_id, id) WHERE kind IN ('signup', 'topup')`);
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(8));
      expect((await ledger.topup(id, USD, { reference: 'wallet:kept', once: true })).applied).toBe(true);
      expect((await ledger.topup(id, USD, { reference: 'wallet:kept', once: true })).applied).toBe(false);
      expect((await ledger.transactions(id)).map((t) => t.note)).toEqual(['wallet:kept', 'signup']);
    } finally {
      await dispose();
    }
  });

  it('builds the credits index again when a build beforehand failed and left it invalid', async () => {
    const { db, dispose } = await openLedgerAt(8);
    try {
      const ledger = new Ledger(db);
      const id = accountId();
      await ledger.openAccount(id);
      await db.query(`CREATE INDEX journal_credits ON journal (account_id, id) WHERE kind IN ('signup', 'topup')`);
      // What a failed CREATE INDEX CONCURRENTLY leaves behind.
      const invalidFlag = `UPDATE pg_index SET indisvalid = $1 WHERE indexrelid = (SELECT c.oid FROM pg_class c WHERE c.relname = 'journal_credits' AND c.relnamespace = current_schema()::regnamespace)`;
      await db.query(invalidFlag, [false]);
      const valid = `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'journal_credits' AND c.relnamespace = current_schema()::regnamespace`;
      expect((await db.query(valid)).rows).toEqual([{ valid: false }]);
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(8));
      expect((await db.query(valid)).rows).toEqual([{ valid: true }]);
      expect((await ledger.transactions(id)).map((t) => t.note)).toEqual(['signup']);
    } finally {
      await dispose();
    }
  });
});
