import { afterEach, describe, expect, it } from 'vitest';
import type { CreditedTopup, CycleMove, LedgerHooks, Queryable } from '@farebox/ledger';
import { openTestLedger, type TestLedger } from './helpers.js';

// The host's code in the ledger's transactions (the gateway's webhook outbox):
// what a hook writes commits with the change, and a hook that fails fails it.

const USD = 10_000_000n;
let t: TestLedger | undefined;
afterEach(async () => {
  await t?.dispose();
  t = undefined;
});

/** Hooks that write what they saw into a table of their own, in the ledger's transaction. */
function recordingHooks(fail?: { topup?: boolean; move?: boolean }): LedgerHooks & { seen: Array<CreditedTopup | CycleMove> } {
  const seen: Array<CreditedTopup | CycleMove> = [];
  const write = async (tx: Queryable, what: string) => {
    await tx.query('INSERT INTO hook_log (what) VALUES ($1)', [what]);
  };
  return {
    seen,
    async topupCredited(tx, topup) {
      await write(tx, `topup ${topup.accountId} ${topup.amount} ${topup.reference}`);
      seen.push(topup);
      if (fail?.topup) throw new Error('the outbox is full');
    },
    async cycleMoved(tx, move) {
      await write(tx, `cycle ${move.cycleId} ${move.from}->${move.to}`);
      seen.push(move);
      if (fail?.move) throw new Error('the outbox is full');
    },
  };
}

async function open(hooks: LedgerHooks): Promise<TestLedger> {
  t = await openTestLedger({ hooks });
  await t.ledger.db.query('CREATE TABLE hook_log (what TEXT NOT NULL)');
  return t;
}
const log = async (l: TestLedger) => (await l.ledger.db.query<{ what: string }>('SELECT what FROM hook_log ORDER BY what')).rows.map((r) => r.what);

describe('ledger hooks', () => {
  it('run in the crediting transaction of a top-up, once per top-up applied (not for a repeat of a top-up made once)', async () => {
    const hooks = recordingHooks();
    const l = await open(hooks);
    await l.ledger.openAccount('acct_h1');
    await l.ledger.topup('acct_h1', 2n * USD, { reference: 'free:topup:a', once: true });
    await l.ledger.topup('acct_h1', 2n * USD, { reference: 'free:topup:a', once: true });
    expect(await log(l)).toEqual([`topup acct_h1 ${2n * USD} free:topup:a`]);
    expect(hooks.seen).toEqual([{ accountId: 'acct_h1', amount: 2n * USD, reference: 'free:topup:a', balance: 7n * USD, payment: null }]);
  });

  it('a hook that fails fails the top-up: no credit and nothing it wrote', async () => {
    const l = await open(recordingHooks({ topup: true }));
    await l.ledger.openAccount('acct_h2');
    await expect(l.ledger.topup('acct_h2', USD)).rejects.toThrow('the outbox is full');
    expect((await l.ledger.balance('acct_h2')).balance).toBe(5n * USD);
    expect(await log(l)).toEqual([]);
  });

  it('run when a wallet top-up is confirmed (with the payment), not when one fails', async () => {
    const hooks = recordingHooks();
    const l = await open(hooks);
    await l.ledger.openAccount('acct_h3');
    const paid = await l.ledger.recordWalletPayment('acct_h3', { kind: 'topup', callId: 'topup:key:1', amount: 3n * USD });
    const refused = await l.ledger.recordWalletPayment('acct_h3', { kind: 'topup', callId: 'topup:key:2', amount: USD });
    await l.ledger.resolveWalletPayment(refused.id, { state: 'failed', error: 'refused by the network' });
    await l.ledger.resolveWalletPayment(paid.id, { state: 'completed', txHash: 'a'.repeat(64), explorerUrl: 'https://explorer.example/tx/a' });
    await l.ledger.resolveWalletPayment(paid.id, { state: 'completed', txHash: 'a'.repeat(64) });
    expect(await log(l)).toEqual([`topup acct_h3 ${3n * USD} wallet:${'a'.repeat(64)}`]);
    expect(hooks.seen[0]).toMatchObject({ balance: 8n * USD, payment: { id: paid.id, state: 'completed', explorerUrl: 'https://explorer.example/tx/a' } });
  });

  it("run in a settlement cycle's state move with its data, and a failing hook leaves the cycle where it was", async () => {
    const hooks = recordingHooks();
    const l = await open(hooks);
    const cycle = await l.ledger.openCycle('GOWNER');
    await l.ledger.advance(cycle.id, 'open', 'closing');
    await l.ledger.advance(cycle.id, 'closing', 'failed', { error: 'escrow provider gone', data: { note: 'by hand' } });
    expect(await log(l)).toEqual([`cycle ${cycle.id} closing->failed`, `cycle ${cycle.id} open->closing`]);
    expect(hooks.seen[1]).toEqual({
      cycleId: cycle.id,
      from: 'closing',
      to: 'failed',
      txHash: null,
      explorerUrl: null,
      escrowId: null,
      error: 'escrow provider gone',
      data: { note: 'by hand' },
    });
    await t!.dispose();

    const failing = await open(recordingHooks({ move: true }));
    const c2 = await failing.ledger.openCycle('GOWNER');
    await expect(failing.ledger.advance(c2.id, 'open', 'closing')).rejects.toThrow('the outbox is full');
    expect((await failing.ledger.getCycle(c2.id)).state).toBe('open');
  });
});
