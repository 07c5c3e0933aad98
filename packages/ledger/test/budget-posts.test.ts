import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Budget } from '@farebox/ledger';
import { accountId, openTestLedger, USD, type TestLedger } from './helpers.js';

// Issue 38: a post that charges exactly what was held (the call path's) does
// not write its budget's row, so the posts' durable commits never keep the row
// locked from the next batch of holds under the same policy; what the budget
// has spent and holds still reads exactly.

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

const PRICE = USD / 100n;
let n = 0;

describe('exact posts under a budget', () => {
  it('leave the budget row unwritten, and the budget reads spent, held and the refusal exactly', async () => {
    const id = accountId();
    await t.ledger.openAccount(id);
    const budget: Budget = { credential: `key_posts_${Date.now()}`, period: 'total', limit: 12n * PRICE };
    const hold = (amount = PRICE) => t.ledger.hold(id, amount, { callId: `call_${++n}`, service: 'echo', budget });
    const use = async () => (await t.ledger.budgets([budget])).get(`${budget.credential}\n${budget.period}`);
    const version = async () =>
      String((await t.ledger.db.query('SELECT xmin::text AS v FROM credential_budgets WHERE credential = $1', [budget.credential])).rows[0]!.v);

    const holds = await Promise.all(Array.from({ length: 10 }, () => hold()));
    const pending = await hold();
    const wallet = await t.ledger.recordWalletPayment(id, { kind: 'call', callId: `w_${++n}`, amount: PRICE, service: 'echo', budget });
    expect(await use()).toEqual({ spent: 0n, held: 12n * PRICE });
    const before = await version();

    // Ten exact posts (one batch or several): the row is not written.
    await Promise.all(holds.map((h) => t.ledger.post(h.hold.id, { publisherOwner: 'pub', service: 'echo', gross: PRICE })));
    expect(await version()).toBe(before);
    expect(await use()).toEqual({ spent: 10n * PRICE, held: 2n * PRICE });
    const refused = await hold().then(
      () => undefined,
      (e: { code?: string; data?: unknown }) => e,
    );
    expect(refused?.code).toBe('BUDGET_EXCEEDED');
    expect(refused?.data).toMatchObject({ spent: (10n * PRICE).toString(), held: (2n * PRICE).toString(), remaining: '0' });

    // A partial post gives back what it did not charge; the wallet payment settles as before.
    await t.ledger.post(pending.hold.id, { publisherOwner: 'pub', service: 'echo', gross: PRICE / 4n });
    await t.ledger.resolveWalletPayment(wallet.id, { state: 'completed', txHash: `tx_${n}` });
    expect(await use()).toEqual({ spent: 11n * PRICE + PRICE / 4n, held: 0n });
    const last = await hold((3n * PRICE) / 4n);
    expect(await use()).toEqual({ spent: 11n * PRICE + PRICE / 4n, held: (3n * PRICE) / 4n });
    await t.ledger.void(last.hold.id, 'service failed');
    expect(await use()).toEqual({ spent: 11n * PRICE + PRICE / 4n, held: 0n });
    expect((await t.ledger.verify()).ok).toBe(true);
  });
});
