import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashRequest, LedgerError, SIGNUP_CREDIT } from '@farebox/ledger';
import { accountId, openTestLedger, USD, type TestLedger } from './helpers.js';

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

type Outcome = 'success' | 'partial' | 'failure' | 'timeout';
type Op =
  | { kind: 'signup' }
  | { kind: 'resignup'; who: number }
  | { kind: 'topup'; who: number; cents: number }
  | { kind: 'call'; who: number; price: bigint; outcome: Outcome; keyed: boolean }
  | { kind: 'retry'; which: number; sameBody: boolean }
  | { kind: 'reap' }
  | { kind: 'settle' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'signup' }) },
  { weight: 1, arbitrary: fc.nat().map<Op>((who) => ({ kind: 'resignup', who })) },
  {
    weight: 3,
    arbitrary: fc
      .record({ who: fc.nat(), cents: fc.oneof(fc.integer({ min: -100, max: 100_100 }), fc.constantFrom(0, 100_000, 100_001)) })
      .map<Op>((r) => ({ kind: 'topup', ...r })),
  },
  {
    weight: 6,
    arbitrary: fc
      .record({
        who: fc.nat(),
        price: fc.bigInt({ min: 1n, max: 3n * USD }),
        outcome: fc.constantFrom<Outcome>('success', 'partial', 'failure', 'timeout'),
        keyed: fc.boolean(),
      })
      .map<Op>((r) => ({ kind: 'call', ...r })),
  },
  { weight: 3, arbitrary: fc.record({ which: fc.nat(), sameBody: fc.boolean() }).map<Op>((r) => ({ kind: 'retry', ...r })) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'reap' }) },
  { weight: 1, arbitrary: fc.constant<Op>({ kind: 'settle' }) },
);

interface ModelAccount {
  id: string;
  balance: bigint;
  held: Map<string, bigint>;
}

interface Keyed {
  who: ModelAccount;
  key: string;
  body: { service: string; payload: { price: string; outcome: Outcome } };
  response: unknown;
}

it('keeps credits + holds + gross earnings equal to sign-up credits + top-ups, never negative, one effect per key', async () => {
  const ledger = t.ledger;
  const publisher = accountId('GPROP');
  let claimedTotal = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 5, maxLength: 30 }), async (ops) => {
      const accounts: ModelAccount[] = [];
      const keyed: Keyed[] = [];
      let credited = 0n;
      let seq = 0;
      const pick = (who: number) => accounts[who % accounts.length];

      for (const op of ops) {
        if (op.kind === 'signup' || accounts.length === 0) {
          const id = accountId('prop');
          const opened = await ledger.openAccount(id);
          expect(opened.created).toBe(true);
          accounts.push({ id, balance: SIGNUP_CREDIT, held: new Map() });
          credited += SIGNUP_CREDIT;
          if (op.kind === 'signup') continue;
        }
        if (op.kind === 'resignup') {
          const a = pick(op.who)!;
          expect((await ledger.openAccount(a.id)).created).toBe(false);
        } else if (op.kind === 'topup') {
          const a = pick(op.who)!;
          const amount = BigInt(op.cents) * 100_000n;
          const aggregated = a.balance + [...a.held.values()].reduce((s, v) => s + v, 0n);
          const result = await ledger.topup(a.id, amount).catch((e: unknown) => e);
          if (amount <= 0n || amount > 1_000n * USD) {
            expect(result).toMatchObject({ code: 'INVALID_AMOUNT' });
          } else if (aggregated + amount > 10_000n * USD) {
            expect(result).toMatchObject({ code: 'BALANCE_CAP_EXCEEDED' });
          } else {
            expect(result).toMatchObject({ balance: a.balance + amount });
            a.balance += amount;
            credited += amount;
          }
        } else if (op.kind === 'call') {
          const a = pick(op.who)!;
          const key = `k${++seq}`;
          const body = { service: 'prop-svc', payload: { price: op.price.toString(), outcome: op.outcome } };
          const run = async () => {
            let holdId: string;
            try {
              holdId = (await ledger.hold(a.id, op.price, { callId: key, service: body.service, ...(op.keyed ? { idempotencyKey: key } : {}) })).hold.id;
            } catch (error) {
              if (error instanceof LedgerError && error.code === 'INSUFFICIENT_BALANCE') return { status: 400, error: error.message };
              throw error;
            }
            if (op.outcome === 'success' || op.outcome === 'partial') {
              const gross = op.outcome === 'partial' ? (op.price + 1n) / 2n : op.price;
              await ledger.post(holdId, { publisherOwner: publisher, service: body.service, gross });
              return { status: 200, holdId, charged: gross.toString() };
            }
            if (op.outcome === 'failure') {
              await ledger.void(holdId, 'service failed');
              return { status: 500, holdId, charged: '0' };
            }
            return { status: 504, holdId, pending: true };
          };
          const result = op.keyed ? (await ledger.withIdempotency(a.id, key, hashRequest(body), run)).response : await run();
          if (a.balance < op.price) {
            expect(result).toEqual({ status: 400, error: 'insufficient balance' });
          } else {
            const r = result as { holdId: string; charged?: string };
            a.balance -= op.price;
            if (op.outcome === 'timeout') a.held.set(r.holdId, op.price);
            else a.balance += op.price - BigInt(r.charged ?? '0');
          }
          if (op.keyed) keyed.push({ who: a, key, body, response: result });
        } else if (op.kind === 'retry') {
          const k = keyed[op.which % Math.max(keyed.length, 1)];
          if (!k) continue;
          const body = op.sameBody ? k.body : { ...k.body, payload: { ...k.body.payload, price: '999' } };
          const retried = await ledger
            .withIdempotency(k.who.id, k.key, hashRequest(body), async () => {
              throw new Error('a retry must not run again');
            })
            .catch((e: unknown) => e);
          if (op.sameBody) expect(retried).toEqual({ replayed: true, response: k.response });
          else expect(retried).toMatchObject({ code: 'IDEMPOTENCY_MISMATCH' });
        } else if (op.kind === 'reap') {
          await ledger.reapExpiredHolds(0);
          for (const a of accounts) {
            for (const amount of a.held.values()) a.balance += amount;
            a.held.clear();
          }
        } else if (op.kind === 'settle') {
          const cycle = await ledger.openCycle(publisher);
          claimedTotal += (await ledger.claimEarnings(cycle.id)).claimed;
        }
      }

      const ids = accounts.map((a) => a.id);
      for (const a of accounts) {
        const held = [...a.held.values()].reduce((s, v) => s + v, 0n);
        expect(await ledger.balance(a.id)).toMatchObject({ balance: a.balance, held });
        expect(a.balance >= 0n).toBe(true);
      }
      // The property over this run's accounts, from the database itself.
      const { rows } = await ledger.db.query(
        `SELECT
           (SELECT COALESCE(sum(balance), 0) FROM accounts WHERE id = ANY($1)) AS credits,
           (SELECT COALESCE(sum(amount), 0) FROM holds WHERE account_id = ANY($1) AND state = 'pending') AS held,
           (SELECT COALESCE(sum(gross), 0) FROM earnings WHERE payer_account_id = ANY($1)) AS earned,
           (SELECT COALESCE(sum(amount), 0) FROM journal WHERE account_id = ANY($1) AND kind IN ('signup', 'topup')) AS credited,
           (SELECT COALESCE(min(balance), 0) FROM accounts WHERE id = ANY($1)) AS lowest`,
        [ids],
      );
      const r = rows[0] as Record<string, string>;
      expect(BigInt(r.credits!) + BigInt(r.held!) + BigInt(r.earned!)).toBe(credited);
      expect(BigInt(r.credited!)).toBe(credited);
      expect(BigInt(r.lowest!) >= 0n).toBe(true);
      // One effect per key: at most one live hold per idempotency key.
      const dup = await ledger.db.query(
        `SELECT count(*) AS n FROM (SELECT idempotency_key FROM holds WHERE account_id = ANY($1) AND idempotency_key IS NOT NULL GROUP BY account_id, idempotency_key HAVING count(*) > 1) d`,
        [ids],
      );
      expect(dup.rows[0]?.n).toBe('0');
      const report = await ledger.verify();
      expect(report.mismatches).toEqual([]);
      const claimed = await ledger.db.query('SELECT count(*) AS n FROM earnings WHERE publisher_owner = $1 AND cycle_id IS NOT NULL', [publisher]);
      expect(Number(claimed.rows[0]?.n)).toBe(claimedTotal);
    }),
    { numRuns: 25 },
  );
});
