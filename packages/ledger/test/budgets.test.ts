import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, LedgerError, type Budget } from '@farebox/ledger';
import { accountId, openTestLedger, USD, type TestLedger } from './helpers.js';

// Credential budgets (migration 0013): a hold under a spending policy counts
// against the credential's budget in the statement that debits the credits;
// posts spend it, voids (refunds, the reaper, a dead instance) give it back;
// a wallet payment (migration 0014) reserves it when recorded and settles it
// when resolved.

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

const PRICE = USD / 100n; // 0.01 USD a call
let n = 0;
const budgetOf = (limit: bigint, period = 'day:2026-11-26'): Budget => ({ credential: `key_${++n}_${Date.now()}`, period, limit });
const hold = (account: string, budget: Budget, amount = PRICE, extra: { idempotencyKey?: string; timeoutMs?: number } = {}) =>
  t.ledger.hold(account, amount, { callId: `call_${++n}`, service: 'echo', budget, ...extra });
const use = async (b: Budget) => (await t.ledger.budgets([b])).get(`${b.credential}\n${b.period}`) ?? { spent: 0n, held: 0n };

async function account(): Promise<string> {
  const id = accountId();
  await t.ledger.openAccount(id);
  return id;
}

async function refusal(p: Promise<unknown>): Promise<LedgerError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LedgerError);
  return err as LedgerError;
}

describe('credential budgets', () => {
  it('200 racing holds on a 50-call budget: exactly 50 are placed and paid, the rest refused with nothing debited', async () => {
    const id = await account();
    const before = (await t.ledger.balance(id)).balance;
    const budget = budgetOf(50n * PRICE);
    const results = await Promise.allSettled(Array.from({ length: 200 }, () => hold(id, budget)));
    const placed = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as LedgerError] : []));
    expect(placed).toHaveLength(50);
    expect(refused).toHaveLength(150);
    for (const e of refused) expect(e.code).toBe('BUDGET_EXCEEDED');
    await Promise.all(placed.map((p) => t.ledger.post(p.hold.id, { publisherOwner: 'pub', service: 'echo', gross: PRICE })));
    expect((await t.ledger.balance(id)).balance).toBe(before - 50n * PRICE);
    expect(await use(budget)).toEqual({ spent: 50n * PRICE, held: 0n });
    const last = await refusal(hold(id, budget));
    expect(last.data).toMatchObject({ limit: (50n * PRICE).toString(), spent: (50n * PRICE).toString(), remaining: '0', needed: PRICE.toString() });
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it('a refund, a partial post and the reaper give the budget back', async () => {
    const id = await account();
    const budget = budgetOf(3n * PRICE);
    const a = await hold(id, budget);
    const b = await hold(id, budget);
    const c = await hold(id, budget);
    await refusal(hold(id, budget));
    expect(await use(budget)).toEqual({ spent: 0n, held: 3n * PRICE });
    await t.ledger.void(a.hold.id, 'service failed');
    await t.ledger.post(b.hold.id, { publisherOwner: 'pub', service: 'echo', gross: PRICE / 2n });
    expect(await use(budget)).toEqual({ spent: PRICE / 2n, held: PRICE });
    const { voided } = await t.ledger.reapExpiredHolds(0);
    expect(voided).toContain(c.hold.id);
    expect(await use(budget)).toEqual({ spent: PRICE / 2n, held: 0n });
    await hold(id, budget, 2n * PRICE);
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it("a dead instance's holds give their budget back", async () => {
    const id = await account();
    const budget = budgetOf(2n * PRICE);
    const other = new Ledger(t.ledger.db);
    await other.joinInstance('dies');
    await other.hold(id, 2n * PRICE, { callId: 'dead_call', service: 'echo', budget });
    await refusal(hold(id, budget));
    const self = new Ledger(t.ledger.db);
    await self.joinInstance('lives');
    const reaped = await self.reapDeadInstances({ timeoutMs: 1, sole: true });
    expect(reaped.voided).toHaveLength(1);
    expect(await use(budget)).toEqual({ spent: 0n, held: 0n });
    await self.leaveInstance();
    await t.ledger.db.query('DELETE FROM ledger_instances');
  });

  it('a lowered limit refuses the next hold; a raised one allows it', async () => {
    const id = await account();
    const budget = budgetOf(5n * PRICE);
    await hold(id, budget, 2n * PRICE);
    const lowered = { ...budget, limit: 2n * PRICE };
    const e = await refusal(hold(id, lowered));
    expect(e.data).toMatchObject({ limit: (2n * PRICE).toString(), remaining: '0' });
    await hold(id, { ...budget, limit: 3n * PRICE });
    expect(await use(budget)).toEqual({ spent: 0n, held: 3n * PRICE });
  });

  it('a hold the credits do not cover changes no budget; an idempotent replay counts once', async () => {
    const id = await account();
    const budget = budgetOf(100n * USD);
    const balance = (await t.ledger.balance(id)).balance;
    expect((await refusal(hold(id, budget, balance + 1n))).code).toBe('INSUFFICIENT_BALANCE');
    expect(await use(budget)).toEqual({ spent: 0n, held: 0n });
    const first = await hold(id, budget, PRICE, { idempotencyKey: 'k1' });
    const again = await hold(id, budget, PRICE, { idempotencyKey: 'k1' });
    expect(again.replayed).toBe(true);
    expect(again.hold.id).toBe(first.hold.id);
    expect(await use(budget)).toEqual({ spent: 0n, held: PRICE });
  });

  it('periods are separate budgets, and a wallet reservation counts against the same one', async () => {
    const id = await account();
    const today = budgetOf(PRICE, 'day:2026-11-26');
    await hold(id, today);
    await refusal(hold(id, today));
    await hold(id, { ...today, period: 'day:2026-11-27' });
    const total = budgetOf(2n * PRICE, 'total');
    const paying = await t.ledger.recordWalletPayment(id, { kind: 'call', callId: `call_${++n}`, amount: PRICE, service: 'echo', budget: total });
    expect(paying.budget).toEqual({ credential: total.credential, period: 'total' });
    await hold(id, total);
    expect((await refusal(t.ledger.recordWalletPayment(id, { kind: 'call', callId: `call_${++n}`, amount: PRICE, budget: total }))).code).toBe(
      'BUDGET_EXCEEDED',
    );
    await t.ledger.resolveWalletPayment(paying.id, { state: 'completed', txHash: 'tx-1' });
    expect(await use(total)).toEqual({ spent: PRICE, held: PRICE });
  });

  it("a wallet payment's reservation is recorded with it and settled by the transaction that resolves it: spent when it completed, given back when it failed", async () => {
    const id = await account();
    const budget = budgetOf(3n * PRICE, 'total');
    const pay = (callId: string, amount = PRICE) => t.ledger.recordWalletPayment(id, { kind: 'call', callId, amount, service: 'echo', budget });
    const a = await pay('w-a');
    const b = await pay('w-b');
    // Recording the same payment again reserves nothing more.
    expect((await pay('w-a')).id).toBe(a.id);
    expect(await use(budget)).toEqual({ spent: 0n, held: 2n * PRICE });
    // Over the budget: refused, and no payment is recorded.
    const over = await refusal(pay('w-c', 2n * PRICE));
    expect(over.code).toBe('BUDGET_EXCEEDED');
    expect(over.data).toMatchObject({
      limit: (3n * PRICE).toString(),
      held: (2n * PRICE).toString(),
      remaining: PRICE.toString(),
      needed: (2n * PRICE).toString(),
    });
    expect((await t.ledger.pendingWalletPayments(10_000)).filter((p) => p.accountId === id).map((p) => p.callId)).toEqual(['w-a', 'w-b']);
    await t.ledger.resolveWalletPayment(a.id, { state: 'completed', txHash: 'tx-a' });
    // What a restart's reconciliation does with a payment a crash left pending.
    await t.ledger.resolveWalletPayment(b.id, { state: 'failed', error: 'interrupted before it was applied' });
    expect(await use(budget)).toEqual({ spent: PRICE, held: 0n });
    // A second resolution changes nothing.
    expect((await t.ledger.resolveWalletPayment(b.id, { state: 'completed', txHash: 'tx-b' })).applied).toBe(false);
    expect(await use(budget)).toEqual({ spent: PRICE, held: 0n });
    // Without a budget, a wallet payment writes none.
    const free = await t.ledger.recordWalletPayment(id, { kind: 'call', callId: 'w-free', amount: PRICE });
    expect(free.budget).toBeNull();
    await t.ledger.resolveWalletPayment(free.id, { state: 'completed', txHash: 'tx-free' });
    expect(await use(budget)).toEqual({ spent: PRICE, held: 0n });
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it('a burst of holds on several accounts and budgets goes as one batch: each budget holds exactly its holds, the credits exactly theirs', async () => {
    const [a, b] = [await account(), await account()];
    const [ka, kb] = [budgetOf(10n * PRICE), budgetOf(10n * PRICE)];
    const before = [(await t.ledger.balance(a)).balance, (await t.ledger.balance(b)).balance];
    // A ledger on the same database that counts the statements it sends.
    const sent: string[] = [];
    const db = t.ledger.db;
    const counting = new Ledger(
      new Proxy(db, {
        get: (target, prop, receiver) =>
          prop === 'query'
            ? (sql: string, params?: unknown[]) => {
                sent.push(sql);
                return target.query(sql, params);
              }
            : Reflect.get(target, prop, receiver),
      }),
    );
    const at = (account: string, budget: Budget, amount = PRICE) => counting.hold(account, amount, { callId: `call_${++n}`, service: 'echo', budget });
    const placed = await Promise.all([
      ...Array.from({ length: 4 }, () => at(a, ka)),
      ...Array.from({ length: 3 }, () => at(b, ka)),
      ...Array.from({ length: 5 }, () => at(b, kb, 2n * PRICE)),
    ]);
    expect(new Set(placed.map((p) => p.hold.id)).size).toBe(12);
    expect(sent).toHaveLength(1);
    expect(await use(ka)).toEqual({ spent: 0n, held: 7n * PRICE });
    expect(await use(kb)).toEqual({ spent: 0n, held: 10n * PRICE });
    expect((await t.ledger.balance(a)).balance).toBe(before[0]! - 4n * PRICE);
    expect((await t.ledger.balance(b)).balance).toBe(before[1]! - 13n * PRICE);
    // The last hold of each account reports the credits after all of them.
    expect(placed[3]!.balance).toBe(before[0]! - 4n * PRICE);
    // A burst over one budget: the batch is refused as a whole, then each hold on its own (3 of 5 fit).
    const over = await Promise.allSettled(Array.from({ length: 5 }, () => hold(a, ka)));
    expect(over.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    expect(await use(ka)).toEqual({ spent: 0n, held: 10n * PRICE });
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it('refuses a malformed budget, changing nothing', async () => {
    const id = await account();
    const e = await refusal(hold(id, { credential: 'key_x', period: 'fortnight', limit: PRICE }));
    expect(e.code).toBe('INVALID_INPUT');
    expect(e.message).toBe('budget.period must be day:, week:, month: or total');
  });
});
