import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, type LedgerError, SIGNUP_CREDIT, openDatabase } from '@farebox/ledger';
import type { Database, HoldResult } from '@farebox/ledger';
import { accountId, databaseUrl, onPostgres, openTestLedger, type TestLedger } from './helpers.js';

// Group commit: holds and posts submitted in the same turn of the event loop,
// or while others are being written, go out together. One batch in flight
// makes the grouping deterministic: a burst goes as one statement, and
// everything submitted while it runs goes next, as one statement.
let t: TestLedger;
let statements: string[];
let ledger: Ledger;

beforeAll(async () => {
  t = await openTestLedger();
  statements = [];
  const db = t.ledger.db;
  const counting: Database = {
    ...db,
    query: (text, params) => {
      statements.push(text);
      return db.query(text, params);
    },
  };
  ledger = new Ledger(counting, { batch: { maxInFlight: 1, maxSize: 64 } });
});
afterAll(async () => {
  await t?.dispose();
});

const batchedHolds = () => statements.filter((s) => s.includes('farebox_hold_batch(')).length;
const singleHolds = () => statements.filter((s) => s.includes('WITH debit AS')).length;
const batchedPosts = () => statements.filter((s) => s.includes('unnest(') && s.includes('INSERT INTO earnings')).length;

/** An account left with exactly `units` of credits. */
async function accountWith(units: bigint): Promise<string> {
  const id = accountId();
  await ledger.openAccount(id);
  const { hold } = await ledger.hold(id, SIGNUP_CREDIT - units, { callId: 'setup', service: 'setup' });
  await ledger.post(hold.id, { publisherOwner: 'GSETUP', service: 'setup', gross: SIGNUP_CREDIT - units });
  return id;
}

const outcome = (p: Promise<HoldResult>) =>
  p.then(
    (r) => ({ ok: true as const, r }),
    (e: unknown) => ({ ok: false as const, e: e as LedgerError }),
  );

describe('batched holds', () => {
  it('holds a burst on many accounts in one statement, each exactly once, with the credits right after it', async () => {
    const accounts = await Promise.all(Array.from({ length: 5 }, () => accountWith(10n)));
    const before = batchedHolds();
    // 5 accounts x 4 holds of 2 units: 8 of 10 units held on each account.
    const results = await Promise.all(accounts.flatMap((id) => [1, 2, 3, 4].map((n) => ledger.hold(id, 2n, { callId: `c${n}`, service: 'svc' }))));
    expect(batchedHolds() - before).toBeGreaterThanOrEqual(1);
    expect(new Set(results.map((r) => r.hold.id)).size).toBe(20);
    for (const id of accounts) {
      const mine = results.filter((r) => r.hold.accountId === id);
      expect(mine.map((r) => r.balance).sort()).toEqual([2n, 4n, 6n, 8n]);
      expect(mine.every((r) => r.hold.state === 'pending' && r.hold.amount === 2n && r.hold.idempotencyKey === null)).toBe(true);
      expect(await ledger.balance(id)).toMatchObject({ balance: 2n, held: 8n });
      // The hold as stored is the hold as returned.
      const stored = await ledger.getHold(mine[0]!.hold.id);
      expect(stored).toEqual(mine[0]!.hold);
    }
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('sends a burst on an idle ledger as one statement, its first hold included, and a lone hold alone', async () => {
    const accounts = await Promise.all(Array.from({ length: 4 }, () => accountWith(10n)));
    const [holds0, singles0] = [batchedHolds(), singleHolds()];
    const results = await Promise.all(accounts.map((id, n) => ledger.hold(id, 3n, { callId: `idle${n}`, service: 'svc' })));
    expect([batchedHolds() - holds0, singleHolds() - singles0]).toEqual([1, 0]);
    expect(results.map((r) => r.balance)).toEqual([7n, 7n, 7n, 7n]);
    const lone = await ledger.hold(accounts[0]!, 1n, { callId: 'lone', service: 'svc' });
    expect([batchedHolds() - holds0, singleHolds() - singles0]).toEqual([1, 1]);
    expect(lone.balance).toBe(6n);
  });

  it('decides holds that do not fit together one by one: never an overdraft, never a wrong refusal', async () => {
    const id = await accountWith(3n);
    await ledger.hold(id, 1n, { callId: 'lead', service: 'svc' });
    const burst = await Promise.all([2n, 2n, 1n].map((amount, i) => outcome(ledger.hold(id, amount, { callId: `b${i}`, service: 'svc' }))));
    // 3 - 1 (lead) = 2 left for the burst: 2 fits, then nothing.
    expect(burst.map((o) => o.ok)).toEqual([true, false, false]);
    for (const o of burst.filter((x) => !x.ok)) {
      expect(o.ok === false && o.e.code).toBe('INSUFFICIENT_BALANCE');
      expect(o.ok === false && o.e.message).toBe('insufficient balance');
    }
    expect(await ledger.balance(id)).toMatchObject({ balance: 0n, held: 3n });

    const other = await accountWith(3n);
    await ledger.hold(other, 1n, { callId: 'lead', service: 'svc' });
    // 2 left: 3 cannot fit but 1 and 1 after it can.
    const mixed = await Promise.all([3n, 1n, 1n].map((amount, i) => outcome(ledger.hold(other, amount, { callId: `m${i}`, service: 'svc' }))));
    expect(mixed.map((o) => o.ok)).toEqual([false, true, true]);
    expect(await ledger.balance(other)).toMatchObject({ balance: 0n, held: 3n });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('refuses an unknown account in a burst without failing the others', async () => {
    const id = await accountWith(5n);
    await ledger.hold(id, 1n, { callId: 'lead', service: 'svc' });
    const burst = await Promise.all([
      outcome(ledger.hold(id, 1n, { callId: 'x1', service: 'svc' })),
      outcome(ledger.hold('acct_missing_batch', 1n, { callId: 'x2', service: 'svc' })),
      outcome(ledger.hold(id, 1n, { callId: 'x3', service: 'svc' })),
    ]);
    expect(burst.map((o) => o.ok)).toEqual([true, false, true]);
    expect(burst[1]!.ok === false && burst[1]!.e.code).toBe('ACCOUNT_NOT_FOUND');
    expect(await ledger.balance(id)).toMatchObject({ balance: 2n, held: 3n });
  });

  it('never overdraws under 200 concurrent holds on one account that affords 50', async () => {
    const id = await accountWith(50n);
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => outcome(ledger.hold(id, 1n, { callId: `h${i}`, service: 'svc' }))));
    expect(results.filter((o) => o.ok)).toHaveLength(50);
    expect(results.filter((o) => !o.ok).every((o) => o.ok === false && o.e.code === 'INSUFFICIENT_BALANCE')).toBe(true);
    expect(await ledger.balance(id)).toMatchObject({ balance: 0n, held: 50n });
    expect((await ledger.verify()).mismatches).toEqual([]);
  });
});

describe('batched posts', () => {
  it('posts a burst in one statement and decides partial charges, repeats and voided holds one by one', async () => {
    const id = await accountWith(20n);
    const holds = await Promise.all([1, 2, 3, 4, 5].map((n) => ledger.hold(id, 2n, { callId: `p${n}`, service: 'svc' })));
    const [a, b, c, d, e] = holds.map((h) => h.hold.id) as [string, string, string, string, string];
    await ledger.void(e, 'failed call');
    const lead = ledger.post(a, { publisherOwner: 'GOWNER', service: 'svc', gross: 2n });
    const before = batchedPosts();
    const burst = await Promise.all([
      ledger.post(b, { publisherOwner: 'GOWNER', service: 'svc', gross: 2n }),
      ledger.post(c, { publisherOwner: 'GOWNER', service: 'svc', gross: 1n }), // partial: 1 back to credits
      ledger.post(b, { publisherOwner: 'GOTHER', service: 'svc', gross: 2n }), // the same hold again
      ledger.post(d, { publisherOwner: 'GOWNER', service: 'svc', gross: 2n }),
      ledger.post(e, { publisherOwner: 'GOWNER', service: 'svc', gross: 2n }), // voided before
    ]);
    await lead;
    expect(batchedPosts() - before).toBe(1);
    expect(burst.map((r) => r.applied)).toEqual([true, true, false, true, false]);
    expect(burst[0]!.earning).toMatchObject({ holdId: b, publisherOwner: 'GOWNER', service: 'svc', gross: 2n, fee: 0n, net: 2n, cycleId: null });
    expect(burst[2]!.earning).toEqual(burst[0]!.earning);
    expect(burst[1]!.hold).toMatchObject({ state: 'posted', postedAmount: 1n });
    expect(burst[4]!.hold.state).toBe('voided');
    expect(burst[4]!.earning).toBeNull();
    // 20 - 5 x 2 held + 2 (voided) + 1 (partial) = 13.
    expect(await ledger.balance(id)).toMatchObject({ balance: 13n, held: 0n });
    const stored = await ledger.getHold(d);
    expect(stored).toEqual(burst[3]!.hold);
    expect((await ledger.verify()).mismatches).toEqual([]);
  });

  it('charges 1,000 concurrent calls on 10 accounts exactly once each', async () => {
    const accounts = await Promise.all(Array.from({ length: 10 }, () => accountWith(1_000n)));
    const holdsBefore = batchedHolds();
    const postsBefore = batchedPosts();
    await Promise.all(
      Array.from({ length: 1000 }, async (_, i) => {
        const { hold } = await ledger.hold(accounts[i % 10]!, 1n, { callId: `k${i}`, service: 'svc' });
        await ledger.post(hold.id, { publisherOwner: 'GLOAD', service: 'svc', gross: 1n });
      }),
    );
    // Far fewer statements than calls.
    expect(batchedHolds() - holdsBefore).toBeLessThan(100);
    expect(batchedPosts() - postsBefore).toBeLessThan(100);
    for (const id of accounts) expect(await ledger.balance(id)).toMatchObject({ balance: 900n, held: 0n });
    const report = await ledger.verify();
    expect(report.mismatches).toEqual([]);
  });
});

describe('two instances', () => {
  it('run batches on the same accounts at once without a deadlock, and charge each call once', async () => {
    // On PostgreSQL a second pool on the same schema is a second gateway
    // process; PGlite has one session, so there both share it.
    const secondDb = onPostgres ? await openDatabase({ url: databaseUrl, schema: t.ledger.db.schema!, poolSize: 10 }) : t.ledger.db;
    const failures: string[] = [];
    const watched = (db: Database): Database => ({
      ...db,
      query: async (text, params) => {
        try {
          return await db.query(text, params);
        } catch (e) {
          failures.push(String((e as { code?: string }).code));
          throw e;
        }
      },
    });
    try {
      const a = new Ledger(watched(t.ledger.db), { batch: { maxInFlight: 4, maxSize: 16 } });
      const b = new Ledger(watched(secondDb), { batch: { maxInFlight: 4, maxSize: 16 } });
      const accounts = await Promise.all(Array.from({ length: 12 }, () => accountWith(500n)));
      let seed = 7;
      const pick = () => accounts[(seed = (seed * 1103515245 + 12345) % 2147483648) % accounts.length]!;
      await Promise.all(
        Array.from({ length: 1200 }, async (_, i) => {
          const l = i % 2 ? a : b;
          const { hold } = await l.hold(pick(), 1n, { callId: `t${i}`, service: 'svc' });
          await l.post(hold.id, { publisherOwner: 'GTWO', service: 'svc', gross: 1n });
        }),
      );
      expect(failures).toEqual([]);
      let total = 0n;
      for (const id of accounts) total += (await ledger.balance(id)).balance;
      expect(total).toBe(12n * 500n - 1200n);
      expect((await ledger.verify()).mismatches).toEqual([]);
    } finally {
      if (secondDb !== t.ledger.db) await secondDb.close();
    }
  });
});
