import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ledger, LedgerError, SIGNUP_CREDIT, migrateLedger } from '@farebox/ledger';
import { accountId, openLedgerAt, openTestLedger, USD, type TestLedger, migrationsAfter } from './helpers.js';

let t: TestLedger;
beforeAll(async () => {
  t = await openTestLedger();
});
afterAll(async () => {
  await t?.dispose();
});

/** `n` posted calls of `price` each from a fresh payer to `owner`. */
async function earn(ledger: Ledger, owner: string, n: number, price: bigint, service = 'svc'): Promise<void> {
  const payer = accountId('payer');
  await ledger.openAccount(payer);
  for (let i = 0; i < n; i++) {
    const { hold } = await ledger.hold(payer, price, { callId: `${payer}-${i}`, service });
    await ledger.post(hold.id, { publisherOwner: owner, service, gross: price });
  }
}

describe('publisher earnings', () => {
  it('totals gross, fee and net, split into pending and settled', async () => {
    const owner = accountId('GOWNER');
    await earn(t.ledger, owner, 4, 1_000_001n);
    const totals = await t.ledger.publisherTotals(owner);
    // fee per call floor(1,000,001 x 5%) = 50,000; net 950,001.
    expect(totals).toEqual({ publisherOwner: owner, calls: 4, gross: 4_000_004n, fee: 200_000n, earned: 3_800_004n, pending: 3_800_004n, settled: 0n });
    expect(await t.ledger.publisherTotals(accountId('nobody'))).toMatchObject({ calls: 0, earned: 0n });
  });

  it('gives a daily series of the last n days, net of the fee, with empty days as zeros', async () => {
    const owner = accountId('GDAILY');
    await earn(t.ledger, owner, 3, USD);
    const series = await t.ledger.publisherAnalytics(owner, 7);
    expect(series).toHaveLength(7);
    const today = new Date().toISOString().slice(0, 10);
    expect(series[6]).toEqual({ day: today, calls: 3, gross: 3n * USD, fee: 1_500_000n, earned: 28_500_000n });
    expect(series.slice(0, 6).every((p) => p.calls === 0 && p.earned === 0n)).toBe(true);
    expect(await t.ledger.publisherAnalytics(owner)).toHaveLength(30);
    for (const days of [0, 91, 1.5]) {
      await expect(t.ledger.publisherAnalytics(owner, days)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
  });

  it('reports per-service stats and platform revenue', async () => {
    const owner = accountId('GSTATS');
    await earn(t.ledger, owner, 2, USD, 'alpha');
    await earn(t.ledger, owner, 1, USD, 'beta');
    expect((await t.ledger.serviceStats(owner)).map((s) => [s.service, s.calls, s.earned])).toEqual([
      ['alpha', 2, 19_000_000n],
      ['beta', 1, 9_500_000n],
    ]);
    const stats = await t.ledger.platformStats();
    expect(stats.fees).toBe(stats.gross - stats.net);
    expect(stats.calls).toBeGreaterThanOrEqual(3);
  });
});

describe('settlement cycles', () => {
  it('opens one cycle per owner even when asked concurrently', async () => {
    const owner = accountId('GOPEN');
    const cycles = await Promise.all(Array.from({ length: 6 }, () => t.ledger.openCycle(owner)));
    expect(new Set(cycles.map((c) => c.id)).size).toBe(1);
    expect(cycles[0]).toMatchObject({ state: 'open', publisherOwner: owner, calls: 0, gross: 0n });
  });

  it('never lets two concurrent settlers claim the same earning', async () => {
    const owner = accountId('GCLAIM');
    await earn(t.ledger, owner, 60, 1_000n);
    const cycle = await t.ledger.openCycle(owner);
    const claimer = async (batch: boolean) => {
      let total = 0;
      for (;;) {
        const r = await t.ledger.claimEarnings(cycle.id, { limit: 7, batch });
        if (r.claimed === 0) return total;
        total += r.claimed;
      }
    };
    // One claims without a batch, two with one.
    const counts = await Promise.all([claimer(false), claimer(true), claimer(true)]);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(60);
    const { rows } = await t.ledger.db.query('SELECT count(*) AS n, count(DISTINCT cycle_id) AS cycles FROM earnings WHERE publisher_owner = $1', [owner]);
    expect(rows[0]).toMatchObject({ n: String(60), cycles: String(1) });
    const read = await t.ledger.getCycle(cycle.id);
    expect(read).toMatchObject({ calls: 60, gross: 60_000n });
    // What the batching claimers took is in their batches, exactly.
    expect(read.fundingPrepared).toBe(BigInt(counts[1]! + counts[2]!) * 1_000n);
  });

  it('puts each earning in exactly one cycle across cycles of the same owner', async () => {
    const owner = accountId('GTWO');
    await earn(t.ledger, owner, 10, 1_000n);
    const first = await t.ledger.openCycle(owner);
    await t.ledger.advance(first.id, 'open', 'closing');
    const second = await t.ledger.openCycle(owner);
    expect(second.id).not.toBe(first.id);
    const [a, b] = await Promise.all([t.ledger.claimEarnings(first.id), t.ledger.claimEarnings(second.id)]);
    expect(a.claimed + b.claimed).toBe(10);
    const { rows } = await t.ledger.db.query('SELECT count(*) AS n FROM earnings WHERE publisher_owner = $1 AND cycle_id IS NULL', [owner]);
    expect(rows[0]?.n).toBe('0');
  });

  it('moves through the states only from the expected state, recording each transaction', async () => {
    const owner = accountId('GFLOW');
    await earn(t.ledger, owner, 5, 2_000_000n);
    const cycle = await t.ledger.openCycle(owner);
    await t.ledger.claimEarnings(cycle.id);
    expect((await t.ledger.advance(cycle.id, 'open', 'closing')).applied).toBe(true);
    // Two settlers racing the same step: one wins, the other sees the new state.
    const racing = await Promise.all([
      t.ledger.advance(cycle.id, 'closing', 'deployed', { escrowId: 'CESCROW', txHash: 'deploy-1' }),
      t.ledger.advance(cycle.id, 'closing', 'deployed', { escrowId: 'CESCROW', txHash: 'deploy-2' }),
    ]);
    expect(racing.filter((r) => r.applied)).toHaveLength(1);
    expect(racing.every((r) => r.cycle.state === 'deployed')).toBe(true);
    // Funding in batches: owed vs funded.
    await expect(t.ledger.advance(cycle.id, 'deployed', 'funded')).rejects.toMatchObject({ code: 'UNFUNDED_EARNINGS' });
    const batch = await t.ledger.prepareFunding(cycle.id);
    expect(batch).toMatchObject({ amount: 10_000_000n, state: 'prepared' });
    expect(await t.ledger.prepareFunding(cycle.id)).toBeNull();
    expect(await t.ledger.getCycle(cycle.id)).toMatchObject({ gross: 10_000_000n, funded: 0n, fundingPrepared: 10_000_000n, unfunded: 0n });
    const confirmed = await t.ledger.confirmFunding(batch!.id, { txHash: 'fund-1', explorerUrl: 'http://explorer/tx/fund-1' });
    expect(confirmed.applied).toBe(true);
    expect((await t.ledger.confirmFunding(batch!.id, { txHash: 'fund-other' })).applied).toBe(false);
    expect((await t.ledger.getCycle(cycle.id)).funded).toBe(10_000_000n);
    await expect(t.ledger.claimEarnings(cycle.id)).resolves.toMatchObject({ claimed: 0 });
    expect((await t.ledger.advance(cycle.id, 'deployed', 'funded')).applied).toBe(true);
    await expect(t.ledger.claimEarnings(cycle.id)).rejects.toMatchObject({ code: 'CYCLE_NOT_OPEN' });
    expect((await t.ledger.advance(cycle.id, 'funded', 'released', { txHash: 'release-1' })).applied).toBe(true);
    expect((await t.ledger.publisherTotals(owner)).settled).toBe(0n);
    expect((await t.ledger.advance(cycle.id, 'released', 'swept', { txHash: 'sweep-1' })).applied).toBe(true);
    const done = await t.ledger.advance(cycle.id, 'swept', 'done');
    expect(done.cycle.state).toBe('done');
    expect(done.cycle.steps.map((s) => `${s.fromState}->${s.toState}:${s.txHash ?? ''}`)).toEqual([
      'open->closing:',
      expect.stringMatching(/^closing->deployed:deploy-[12]$/),
      'deployed->funded:',
      'funded->released:release-1',
      'released->swept:sweep-1',
      'swept->done:',
    ]);
    expect(done.cycle.escrowId).toBe('CESCROW');
    expect(await t.ledger.publisherTotals(owner)).toMatchObject({ earned: 9_500_000n, settled: 9_500_000n, pending: 0n });
    // The payer's call now carries the funding transaction.
    const { rows } = await t.ledger.db.query('SELECT payer_account_id FROM earnings WHERE publisher_owner = $1 LIMIT 1', [owner]);
    const txs = await t.ledger.transactions(String(rows[0]?.payer_account_id));
    expect(txs.find((x) => x.type === 'call')).toMatchObject({ txSignature: 'fund-1', explorerUrl: 'http://explorer/tx/fund-1' });
    expect((await t.ledger.listCycles(owner)).map((c) => c.id)).toEqual([cycle.id]);
  });

  it('refuses moves the state machine does not allow', async () => {
    const owner = accountId('GBAD');
    const cycle = await t.ledger.openCycle(owner);
    const error = await t.ledger.advance(cycle.id, 'open', 'released').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LedgerError);
    expect(error).toMatchObject({ code: 'INVALID_TRANSITION' });
    expect((await t.ledger.advance(cycle.id, 'closing', 'deployed')).applied).toBe(false);
    await expect(t.ledger.getCycle('999999999')).rejects.toMatchObject({ code: 'CYCLE_NOT_FOUND' });
    await expect(t.ledger.getCycle('nope')).rejects.toMatchObject({ code: 'CYCLE_NOT_FOUND' });
    // An empty cycle may close straight to done; failure is recorded with its reason.
    await t.ledger.advance(cycle.id, 'open', 'closing');
    expect((await t.ledger.advance(cycle.id, 'closing', 'done')).cycle.state).toBe('done');
    const other = await t.ledger.openCycle(owner);
    const failed = await t.ledger.advance(other.id, 'open', 'failed', { error: 'escrow provider down' });
    expect(failed.cycle).toMatchObject({ state: 'failed', error: 'escrow provider down' });
    expect((await t.ledger.activeCycles()).some((c) => c.id === other.id)).toBe(false);
  });

  it('keeps earnings append-only: amounts and an assigned cycle cannot change', async () => {
    const owner = accountId('GIMM');
    await earn(t.ledger, owner, 1, USD);
    const cycle = await t.ledger.openCycle(owner);
    await t.ledger.claimEarnings(cycle.id);
    await expect(t.ledger.db.query('UPDATE earnings SET gross = gross + 1, net = net + 1 WHERE publisher_owner = $1', [owner])).rejects.toThrow(
      /only an unset/,
    );
    await expect(t.ledger.db.query('UPDATE earnings SET cycle_id = NULL WHERE publisher_owner = $1', [owner])).rejects.toThrow(/only an unset/);
    await expect(t.ledger.db.query('DELETE FROM earnings WHERE publisher_owner = $1', [owner])).rejects.toThrow(/append-only/);
    await expect(t.ledger.db.query('TRUNCATE earnings')).rejects.toThrow(/append-only/);
    // Every other column is fixed once written, and a funding batch once set.
    const batch = (await t.ledger.prepareFunding(cycle.id))!;
    expect(batch.amount).toBe(USD);
    const other = await t.ledger.openCycle(accountId('GOTHER'));
    for (const set of [
      'hold_id = gen_random_uuid()',
      "payer_account_id = 'someone else'",
      "publisher_owner = 'GSOMEONE'",
      "service = 'other'",
      'fee = fee - 1, net = net + 1',
      "created_at = created_at - interval '1 day'",
      `cycle_id = ${other.id}`,
      'funding_batch_id = NULL',
    ]) {
      await expect(t.ledger.db.query(`UPDATE earnings SET ${set} WHERE publisher_owner = $1`, [owner]), set).rejects.toThrow(/only an unset/);
    }
    const { rows } = await t.ledger.db.query('SELECT gross, fee, net, cycle_id, funding_batch_id FROM earnings WHERE publisher_owner = $1', [owner]);
    expect(rows.map((r) => [String(r.gross), String(r.fee), String(r.net), String(r.cycle_id), String(r.funding_batch_id)])).toEqual([
      [String(USD), '500000', '9500000', cycle.id, batch.id],
    ]);
  });
});

describe("an earning's cycle and batch", () => {
  it('are checked by verify(), not per row: a cycle of another owner, a missing cycle, a batch of another cycle', async () => {
    const own = await openTestLedger();
    try {
      const owner = accountId('GREFS');
      await earn(own.ledger, owner, 4, USD);
      const cycle = await own.ledger.openCycle(owner);
      const claimed = await own.ledger.claimEarnings(cycle.id, { limit: 1, batch: true });
      expect(claimed).toMatchObject({ claimed: 1, batch: { amount: USD } });
      const elsewhere = accountId('GELSE');
      await earn(own.ledger, elsewhere, 1, USD);
      const otherCycle = await own.ledger.openCycle(elsewhere);
      const otherBatch = (await own.ledger.claimEarnings(otherCycle.id, { batch: true })).batch!;
      expect((await own.ledger.verify()).ok).toBe(true);
      // Written by hand, past the ledger's statements, into unclaimed earnings (which the guard lets be set once).
      const { rows } = await own.ledger.db.query('SELECT id FROM earnings WHERE publisher_owner = $1 AND cycle_id IS NULL ORDER BY id', [owner]);
      const [a, b, c] = rows.map((r) => String(r.id));
      await own.ledger.db.query('UPDATE earnings SET cycle_id = $2 WHERE id = $1', [a, otherCycle.id]);
      await own.ledger.db.query('UPDATE earnings SET cycle_id = 999999999 WHERE id = $1', [b]);
      await own.ledger.db.query('UPDATE earnings SET cycle_id = $2, funding_batch_id = $3 WHERE id = $1', [c, cycle.id, otherBatch.id]);
      const report = await own.ledger.verify();
      expect(report.mismatches.filter((m) => m.kind === 'reference').sort((x, y) => Number(x.id) - Number(y.id))).toEqual([
        {
          kind: 'reference',
          id: a,
          expected: "earnings.cycle_id names a cycle of the earning's owner",
          actual: `${otherCycle.id} is the cycle of ${otherCycle.publisherOwner}`,
        },
        { kind: 'reference', id: b, expected: "earnings.cycle_id names a cycle of the earning's owner", actual: 'no row 999999999' },
        {
          kind: 'reference',
          id: c,
          expected: "earnings.funding_batch_id names a funding batch of the earning's cycle",
          actual: `${otherBatch.id} is a batch of cycle ${otherCycle.id}`,
        },
      ]);
    } finally {
      await own.dispose();
    }
  });

  it('name cycles and batches that are kept: no DELETE, TRUNCATE or change of key', async () => {
    const owner = accountId('GKEPT');
    await earn(t.ledger, owner, 1, USD);
    const cycle = await t.ledger.openCycle(owner);
    const { batch } = await t.ledger.claimEarnings(cycle.id, { batch: true });
    const other = await t.ledger.openCycle(accountId('GKEPT2'));
    for (const sql of [
      `DELETE FROM settlement_cycles WHERE id = ${cycle.id}`,
      'TRUNCATE settlement_cycles CASCADE',
      `DELETE FROM funding_batches WHERE id = ${batch!.id}`,
      'TRUNCATE funding_batches CASCADE',
    ]) {
      await expect(t.ledger.db.query(sql), sql).rejects.toThrow(/rows are referenced by the journal: (DELETE|TRUNCATE) refused/);
    }
    for (const sql of [
      `UPDATE settlement_cycles SET id = id + 1000000 WHERE id = ${cycle.id}`,
      `UPDATE settlement_cycles SET publisher_owner = 'GSOMEONE' WHERE id = ${cycle.id}`,
      `UPDATE funding_batches SET cycle_id = ${other.id} WHERE id = ${batch!.id}`,
      `UPDATE funding_batches SET id = id + 1000000 WHERE id = ${batch!.id}`,
    ]) {
      await expect(t.ledger.db.query(sql), sql).rejects.toThrow(/\.id and (publisher_owner|cycle_id) never change: UPDATE refused/);
    }
    expect(await t.ledger.getCycle(cycle.id)).toMatchObject({ publisherOwner: owner, calls: 1, batches: [{ id: batch!.id, amount: USD }] });
  });
});

describe("a cycle's totals", () => {
  it('are kept on the cycle as claims add earnings, and verify() finds totals that no longer match them', async () => {
    const own = await openTestLedger();
    try {
      const owner = accountId('GTOTALS');
      await earn(own.ledger, owner, 7, 1_000_001n);
      const cycle = await own.ledger.openCycle(owner);
      expect(await own.ledger.getCycle(cycle.id)).toMatchObject({ calls: 0, gross: 0n, fee: 0n, net: 0n });
      expect(await own.ledger.claimEarnings(cycle.id, { limit: 3 })).toEqual({ claimed: 3, gross: 3_000_003n, fee: 150_000n, net: 2_850_003n });
      expect(await own.ledger.getCycle(cycle.id)).toMatchObject({ calls: 3, gross: 3_000_003n, fee: 150_000n, net: 2_850_003n, unfunded: 3_000_003n });
      await earn(own.ledger, owner, 2, 1_000_001n);
      expect(await own.ledger.claimEarnings(cycle.id)).toMatchObject({ claimed: 6 });
      expect(await own.ledger.claimEarnings(cycle.id)).toEqual({ claimed: 0, gross: 0n, fee: 0n, net: 0n });
      // 9 calls of 1,000,001: fee floor(5%) = 50,000 each.
      expect(await own.ledger.getCycle(cycle.id)).toMatchObject({ calls: 9, gross: 9_000_009n, fee: 450_000n, net: 8_550_009n });
      expect((await own.ledger.verify()).ok).toBe(true);
      await own.ledger.db.query('UPDATE settlement_cycles SET claimed_gross = claimed_gross + 1 WHERE id = $1', [cycle.id]);
      const report = await own.ledger.verify();
      expect(report.mismatches).toEqual([
        {
          kind: 'cycle',
          id: cycle.id,
          expected: 'earnings: 9 calls, gross 9000009, fee 450000, net 8550009',
          actual: 'cycle: 9 calls, gross 9000010, fee 450000, net 8550009',
        },
      ]);
    } finally {
      await own.dispose();
    }
  });

  it('can come with their funding batch: each claimed earning in it, nothing left to batch, and no batch for an empty claim', async () => {
    const owner = accountId('GBATCHED');
    await earn(t.ledger, owner, 4, 2_000_000n);
    const cycle = await t.ledger.openCycle(owner);
    const claim = await t.ledger.claimEarnings(cycle.id, { batch: true, limit: 3 });
    expect(claim).toMatchObject({ claimed: 3, gross: 6_000_000n, batch: { cycleId: cycle.id, amount: 6_000_000n, state: 'prepared' } });
    const { rows } = await t.ledger.db.query('SELECT count(*) AS n FROM earnings WHERE cycle_id = $1 AND funding_batch_id = $2', [cycle.id, claim.batch!.id]);
    expect(String(rows[0]?.n)).toBe('3');
    expect(await t.ledger.prepareFunding(cycle.id)).toBeNull();
    expect(await t.ledger.getCycle(cycle.id)).toMatchObject({ calls: 3, gross: 6_000_000n, fundingPrepared: 6_000_000n, unfunded: 0n });
    // The rest, claimed without a batch, is batched next as before.
    expect(await t.ledger.claimEarnings(cycle.id)).toEqual({ claimed: 1, gross: 2_000_000n, fee: 100_000n, net: 1_900_000n });
    expect(await t.ledger.prepareFunding(cycle.id)).toMatchObject({ amount: 2_000_000n });
    expect(await t.ledger.claimEarnings(cycle.id, { batch: true })).toEqual({ claimed: 0, gross: 0n, fee: 0n, net: 0n, batch: null });
    expect((await t.ledger.getCycle(cycle.id)).batches.map((b) => b.amount)).toEqual([6_000_000n, 2_000_000n]);
  });

  it('are filled in from the earnings already claimed when the ledger is upgraded to keep them', async () => {
    // A ledger as schema version 5 left it: cycles without totals, earnings claimed into two of them.
    const { db, dispose } = await openLedgerAt(5);
    try {
      await db.query(`INSERT INTO settlement_cycles (publisher_owner) VALUES ('GA'), ('GB'), ('GC')`);
      await db.query(
        `INSERT INTO earnings (hold_id, payer_account_id, publisher_owner, service, gross, fee, net, cycle_id)
         SELECT gen_random_uuid(), 'p', c.publisher_owner, 's', g, g / 20, g - g / 20, CASE WHEN c.publisher_owner = 'GC' THEN NULL ELSE c.id END
         FROM settlement_cycles c, generate_series(100, 104) g`,
      );
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(5));
      const { rows } = await db.query(
        `SELECT publisher_owner, claimed_calls, claimed_gross, claimed_fee, claimed_net FROM settlement_cycles ORDER BY publisher_owner`,
      );
      expect(rows.map((r) => [r.publisher_owner, ...[r.claimed_calls, r.claimed_gross, r.claimed_fee, r.claimed_net].map(String)])).toEqual([
        // 100..104: gross 510, fee 5 x 5 = 25, net 485; GC's earnings are not claimed.
        ['GA', '5', '510', '25', '485'],
        ['GB', '5', '510', '25', '485'],
        ['GC', '0', '0', '0', '0'],
      ]);
    } finally {
      await dispose();
    }
  });
});

describe('settled totals and cycle notes', () => {
  it('counts a settled cycle at what the escrow pays on its total (fee floored once per cycle), and pending per call', async () => {
    const owner = accountId('GROUND');
    // 3 calls of 1,000,019: per-call fee 50,000 each (150,000); on the total 3,000,057 x 5% = 150,002.
    await earn(t.ledger, owner, 3, 1_000_019n);
    const cycle = await t.ledger.openCycle(owner);
    await t.ledger.claimEarnings(cycle.id);
    await earn(t.ledger, owner, 1, 1_000_019n);
    for (const [from, to] of [
      ['open', 'closing'],
      ['closing', 'deployed'],
    ] as const)
      await t.ledger.advance(cycle.id, from, to);
    const batch = (await t.ledger.prepareFunding(cycle.id))!;
    await t.ledger.confirmFunding(batch.id, { txHash: 'fund-1' });
    for (const [from, to] of [
      ['deployed', 'funded'],
      ['funded', 'released'],
      ['released', 'swept'],
    ] as const)
      await t.ledger.advance(cycle.id, from, to);
    const totals = await t.ledger.publisherTotals(owner);
    expect(totals).toMatchObject({ calls: 4, gross: 4_000_076n, settled: 3_000_057n - 150_002n, pending: 1_000_019n - 50_000n });
    expect(totals.earned).toBe(totals.settled + totals.pending);
    expect(totals.fee).toBe(150_002n + 50_000n);
  });

  it('records notes on a live cycle without a state move, and refuses them once the cycle is final', async () => {
    const owner = accountId('GNOTES');
    const cycle = await t.ledger.openCycle(owner);
    const noted = await t.ledger.recordCycleData(cycle.id, { escrowId: 'CNOTE', data: { pending: { step: 'deploy', hash: 'h1' } } });
    expect(noted).toMatchObject({ state: 'open', escrowId: 'CNOTE', data: { pending: { step: 'deploy', hash: 'h1' } }, steps: [] });
    expect((await t.ledger.recordCycleData(cycle.id, { data: { pending: null, deployTx: 'h1' } })).data).toEqual({ pending: null, deployTx: 'h1' });
    await t.ledger.advance(cycle.id, 'open', 'closing');
    await t.ledger.advance(cycle.id, 'closing', 'done');
    await expect(t.ledger.recordCycleData(cycle.id, { data: { x: 1 } })).rejects.toMatchObject({ code: 'CYCLE_NOT_OPEN' });
  });
});

describe('wallet payments', () => {
  it('records the intent once, resolves it once, and a completed top-up credits its amount with the transaction as reference', async () => {
    const acct = accountId('wallet');
    await t.ledger.openAccount(acct);
    const call = await t.ledger.recordWalletPayment(acct, { kind: 'call', callId: 'c1', amount: 2_000_000n, service: 'svc', publisherOwner: 'GOWNER' });
    expect(await t.ledger.recordWalletPayment(acct, { kind: 'call', callId: 'c1', amount: 2_000_000n })).toMatchObject({ id: call.id, state: 'pending' });
    expect((await t.ledger.resolveWalletPayment(call.id, { state: 'completed', txHash: 'tx-call', explorerUrl: 'https://x/tx/tx-call' })).applied).toBe(true);
    expect((await t.ledger.resolveWalletPayment(call.id, { state: 'failed', error: 'late' })).applied).toBe(false);
    const topup = await t.ledger.recordWalletPayment(acct, { kind: 'topup', callId: 'c2', amount: 700_000n });
    const done = await t.ledger.resolveWalletPayment(topup.id, { state: 'completed', txHash: 'tx-top' });
    expect(done.balance).toBe(SIGNUP_CREDIT + 700_000n);
    const failed = await t.ledger.recordWalletPayment(acct, { kind: 'call', callId: 'c3', amount: 1n });
    await t.ledger.resolveWalletPayment(failed.id, { state: 'failed', error: 'escrow refused' });
    const txs = await t.ledger.transactions(acct);
    expect(txs.filter((x) => x.paidWith === 'wallet').map((x) => [x.type, x.status, x.txSignature])).toEqual([
      ['call', 'failed', null],
      ['topup', 'completed', 'tx-top'],
      ['call', 'completed', 'tx-call'],
    ]);
    // The paid top-up shows its transaction, not an internal reference.
    expect(txs.find((x) => x.type === 'topup' && x.txSignature === 'tx-top')).toMatchObject({ amount: 700_000n, note: null, paidWith: 'wallet' });
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it('lists a top-up still on its way (pending, with the submitted hash) and one that failed', async () => {
    const acct = accountId('wallet-pending');
    await t.ledger.openAccount(acct);
    const pending = await t.ledger.recordWalletPayment(acct, { kind: 'topup', callId: 'p1', amount: 3_000_000n });
    await t.ledger.noteWalletPayment(pending.id, { data: { hash: 'h-pending', xdr: 'AAAA' } });
    const failed = await t.ledger.recordWalletPayment(acct, { kind: 'topup', callId: 'p2', amount: 4_000_000n });
    await t.ledger.resolveWalletPayment(failed.id, { state: 'failed', error: 'refused by the network: tx_failed' });
    const txs = (await t.ledger.transactions(acct)).filter((x) => x.note !== 'signup');
    expect(txs.map((x) => [x.type, x.status, x.amount, x.txSignature, x.note])).toEqual([
      ['topup', 'failed', 4_000_000n, null, 'refused by the network: tx_failed'],
      ['topup', 'pending', 3_000_000n, 'h-pending', null],
    ]);
    // Neither is credited.
    expect((await t.ledger.balance(acct)).balance).toBe(SIGNUP_CREDIT);
  });

  it('credits a paid top-up even when the account went over the cap after it was sent, and a `once` top-up only once', async () => {
    const acct = accountId('wallet-cap');
    await t.ledger.openAccount(acct);
    const paid = await t.ledger.recordWalletPayment(acct, { kind: 'topup', callId: 'cap', amount: 1_000n * 10_000_000n });
    for (let i = 0; i < 9; i++) await t.ledger.topup(acct, 1_000n * 10_000_000n);
    // The cap would refuse it now, but the USDC is already in the treasury.
    const done = await t.ledger.resolveWalletPayment(paid.id, { state: 'completed', txHash: 'over' });
    expect(done.balance).toBe(SIGNUP_CREDIT + 10_000n * 10_000_000n);
    const once = accountId('once');
    await t.ledger.openAccount(once);
    const results = await Promise.all([1, 2, 3].map(() => t.ledger.topup(once, 10n, { reference: 'free:k', once: true })));
    expect(results.filter((r) => r.applied)).toHaveLength(1);
    expect((await t.ledger.balance(once)).balance).toBe(SIGNUP_CREDIT + 10n);
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it('credits one on-chain transaction once: racing payments that name the same transaction credit one of them, on any account', async () => {
    const [a, b] = [accountId('same-tx-a'), accountId('same-tx-b')];
    await t.ledger.openAccount(a);
    await t.ledger.openAccount(b);
    const hash = `same-${a}`;
    const payments = await Promise.all(
      [a, a, a, b, b].map((acct, i) => t.ledger.recordWalletPayment(acct, { kind: 'topup', callId: `race-${i}`, amount: 10n * USD })),
    );
    const outcomes = await Promise.all(payments.map((p) => t.ledger.resolveWalletPayment(p.id, { state: 'completed', txHash: hash })));
    const credited = outcomes.filter((o) => o.payment.state === 'completed');
    expect(credited).toHaveLength(1);
    for (const o of outcomes.filter((x) => x.payment.state !== 'completed')) {
      expect(o.payment).toMatchObject({ state: 'failed', error: `transaction ${hash} already backs another credit; nothing was credited for it` });
      expect(o.balance).toBeNull();
    }
    const balances = [(await t.ledger.balance(a)).balance, (await t.ledger.balance(b)).balance];
    expect(balances[0]! + balances[1]!).toBe(2n * SIGNUP_CREDIT + 10n * USD);
    expect((await t.ledger.walletCredits()).filter((c) => c.txHash === hash)).toEqual([
      expect.objectContaining({ txHash: hash, paymentId: credited[0]!.payment.id, accountId: credited[0]!.payment.accountId, amount: 10n * USD }),
    ]);
    expect((await t.ledger.verify()).mismatches).toEqual([]);
  });

  it('verify names a credit planted with the reference of a transaction that already backs one', async () => {
    const [payer, other] = [accountId('planted'), accountId('planted-other')];
    await t.ledger.openAccount(payer);
    await t.ledger.openAccount(other);
    const p = await t.ledger.recordWalletPayment(payer, { kind: 'topup', callId: 'real', amount: 3n * USD });
    const hash = `real-${payer}`;
    await t.ledger.resolveWalletPayment(p.id, { state: 'completed', txHash: hash });
    expect((await t.ledger.verify()).mismatches).toEqual([]);
    // A second credit of the same transaction, written around the claim (as the race before schema 10 did).
    await t.ledger.topup(other, 3n * USD, { reference: `wallet:${hash}` });
    const found = (await t.ledger.verify()).mismatches.filter((m) => m.kind === 'wallet-credit');
    expect(found).toEqual([
      {
        kind: 'wallet-credit',
        id: hash,
        expected: `one credit of ${3n * USD} to ${payer} for payment ${p.id} (completed topup ${payer} ${3n * USD} ${hash})`,
        actual: `2 credits in the journal (${payer} ${3n * USD}, ${other} ${3n * USD}); payment completed topup ${payer} ${3n * USD} ${hash}`,
      },
    ]);
  });

  it('an upgrade to schema 10 claims each transaction for its first credit and verify names the duplicates a race left', async () => {
    const { db, dispose } = await openLedgerAt(9);
    try {
      const ledger = new Ledger(db);
      const acct = accountId('dup-upgrade');
      await ledger.openAccount(acct);
      // What racing top-ups left before schema 10: three payments, one transaction, three credits.
      const ps: { id: string }[] = [];
      for (let i = 0; i < 3; i++) {
        // As schema 9's recordWalletPayment and resolveWalletPayment wrote them (today's code writes columns of later
        // schemas): the payment, the credit, then the payment completed with its hash.
        const { rows } = await db.query<{ id: string }>(
          `INSERT INTO wallet_payments (account_id, kind, call_id, amount, data) VALUES ($1, 'topup', $2, $3::bigint, '{}'::jsonb) RETURNING id`,
          [acct, `r${i}`, (10n * USD).toString()],
        );
        const p = { id: String(rows[0]!.id) };
        await ledger.topup(acct, 10n * USD, { reference: 'wallet:h-dup' });
        await db.query(`UPDATE wallet_payments SET state = 'completed', tx_hash = 'h-dup', resolved_at = now() WHERE id = $1`, [p.id]);
        ps.push(p);
      }
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(9));
      expect((await ledger.walletCredits()).map((c) => [c.txHash, c.paymentId])).toEqual([['h-dup', ps[0]!.id]]);
      const found = (await ledger.verify()).mismatches.filter((m) => m.kind === 'wallet-credit');
      expect(found.map((m) => m.id).sort()).toEqual(['h-dup', ps[1]!.id, ps[2]!.id].sort());
      expect(found.find((m) => m.id === 'h-dup')?.actual).toMatch(/^3 credits in the journal/);
      expect(found.find((m) => m.id === ps[1]!.id)?.actual).toBe('no claim: transaction h-dup backs another credit');
      // From now on the database refuses another credit of that transaction.
      const again = await ledger.recordWalletPayment(acct, { kind: 'topup', callId: 'r3', amount: 10n * USD });
      expect((await ledger.resolveWalletPayment(again.id, { state: 'completed', txHash: 'h-dup' })).payment.state).toBe('failed');
    } finally {
      await dispose();
    }
  });
});
