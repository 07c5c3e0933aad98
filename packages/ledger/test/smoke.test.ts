import { afterAll, beforeAll, expect, it } from 'vitest';
import { accountId, openTestLedger, USD, type TestLedger } from './helpers.js';

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

it('runs a hold and a post end to end', async () => {
  const id = accountId();
  const opened = await t.ledger.openAccount(id);
  expect(opened.created).toBe(true);
  expect(opened.balance).toBe(5n * USD);
  const { hold, balance } = await t.ledger.hold(id, USD, { callId: 'c1', service: 'echo' });
  expect(balance).toBe(4n * USD);
  const posted = await t.ledger.post(hold.id, { publisherOwner: 'GOWNER', service: 'echo', gross: USD });
  expect(posted.applied).toBe(true);
  expect(posted.earning?.fee).toBe(500_000n);
  const report = await t.ledger.verify();
  expect(report.mismatches).toEqual([]);
});
