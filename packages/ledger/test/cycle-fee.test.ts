import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLATFORM_FEE_BPS, splitFee } from '@farebox/protocol';
import { Ledger, migrateLedger } from '@farebox/ledger';
import { accountId, openLedgerAt, openTestLedger, type TestLedger, migrationsAfter } from './helpers.js';

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
  await ledger.topup(payer, BigInt(n) * price, { reference: `fund-${payer}` });
  for (let i = 0; i < n; i++) {
    const { hold } = await ledger.hold(payer, price, { callId: `${payer}-${i}`, service });
    await ledger.post(hold.id, { publisherOwner: owner, service, gross: price });
  }
}

/** A cycle claimed in `waves` funding ticks and settled as the engine does: the figures at release. */
async function settle(ledger: Ledger, owner: string, waves: number[], price: bigint) {
  const cycle = await ledger.openCycle(owner);
  for (const [i, n] of waves.entries()) {
    await earn(ledger, owner, n, price);
    const { batch } = await ledger.claimEarnings(cycle.id, { batch: true });
    await ledger.confirmFunding(batch!.id, { txHash: `fund-${owner}-${i}` });
  }
  for (const [from, to] of [
    ['open', 'closing'],
    ['closing', 'deployed'],
    ['deployed', 'funded'],
  ] as const)
    await ledger.advance(cycle.id, from, to);
  const funded = await ledger.getCycle(cycle.id);
  // What the escrow pays at release: the fee once, on the balance the treasury funded.
  const release = splitFee(funded.funded);
  for (const [from, to] of [
    ['funded', 'released'],
    ['released', 'swept'],
  ] as const)
    await ledger.advance(cycle.id, from, to);
  return { cycle: await ledger.getCycle(cycle.id), release };
}

async function earningSums(ledger: Ledger, owner: string) {
  const { rows } = await ledger.db.query(
    'SELECT count(*) AS n, sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net, min(fee) AS lo, max(fee) AS hi FROM earnings WHERE publisher_owner = $1',
    [owner],
  );
  const r = rows[0]!;
  return { calls: Number(r.n), gross: BigInt(r.gross), fee: BigInt(r.fee), net: BigInt(r.net), lowest: BigInt(r.lo), highest: BigInt(r.hi) };
}

describe('the platform fee of a settlement cycle', () => {
  for (const price of [19n, 21n]) {
    it(`is 5 % of the cycle's gross within one base unit over 1,000 calls of ${price} base units, and every publisher figure adds up to what was released`, async () => {
      const owner = accountId(`GFEE${price}`);
      const { cycle, release } = await settle(t.ledger, owner, [250, 250, 300, 200], price);
      const gross = 1_000n * price;
      expect(release.amount).toBe(gross);
      // 5 % of the gross, within one base unit: never the per-call 0 (19) or 1,000 (21).
      expect(gross * PLATFORM_FEE_BPS - release.fee * 10_000n).toBeGreaterThanOrEqual(0n);
      expect(gross * PLATFORM_FEE_BPS - release.fee * 10_000n).toBeLessThan(10_000n);
      expect(release.fee).toBe(price === 19n ? 950n : 1_050n);

      // The cycle's totals are the release's.
      expect(cycle).toMatchObject({ state: 'swept', calls: 1_000, gross, fee: release.fee, net: release.net, funded: gross });
      // So are its earnings' sums: each call's fee is its share (5 % rounded down or up).
      const sums = await earningSums(t.ledger, owner);
      expect(sums).toMatchObject({ calls: 1_000, gross, fee: release.fee, net: release.net });
      expect(sums.lowest).toBeGreaterThanOrEqual((price * PLATFORM_FEE_BPS) / 10_000n);
      expect(sums.highest).toBeLessThanOrEqual((price * PLATFORM_FEE_BPS + 9_999n) / 10_000n);

      // And the publisher's figures: totals, the daily series, per service.
      expect(await t.ledger.publisherTotals(owner)).toMatchObject({
        calls: 1_000,
        gross,
        fee: release.fee,
        settled: release.net,
        pending: 0n,
        earned: release.net,
      });
      const days = await t.ledger.publisherAnalytics(owner, 7);
      expect(days.reduce((s, d) => s + d.earned, 0n)).toBe(release.net);
      expect(days.reduce((s, d) => s + d.fee, 0n)).toBe(release.fee);
      expect(await t.ledger.serviceStats(owner)).toEqual([{ service: 'svc', calls: 1_000, gross, fee: release.fee, earned: release.net }]);
      expect((await t.ledger.verify()).ok).toBe(true);
    }, 120_000);
  }

  it('stays the cycle total across claims of any size, and an unclaimed earning keeps its per-call split until claimed', async () => {
    const owner = accountId('GFEEMIX');
    const cycle = await t.ledger.openCycle(owner);
    let gross = 0n;
    for (const [n, price] of [
      [7, 21n],
      [1, 19n],
      [13, 20n],
      [3, 1_000_019n],
      [1, 21n],
    ] as const) {
      await earn(t.ledger, owner, n, price);
      gross += BigInt(n) * price;
      // Posted, not claimed: floored per call as before.
      expect((await t.ledger.publisherTotals(owner)).pending).toBeGreaterThan(0n);
      const before = await t.ledger.getCycle(cycle.id);
      const claim = await t.ledger.claimEarnings(cycle.id, { limit: 5 });
      let c = await t.ledger.getCycle(cycle.id);
      while (c.calls < before.calls + n) {
        await t.ledger.claimEarnings(cycle.id, { limit: 5 });
        c = await t.ledger.getCycle(cycle.id);
      }
      expect(claim.fee + claim.net).toBe(claim.gross);
      expect(c).toMatchObject({ gross, fee: splitFee(gross).fee, net: splitFee(gross).net });
    }
    expect(await earningSums(t.ledger, owner)).toMatchObject({ gross, fee: splitFee(gross).fee, net: splitFee(gross).net });
    expect((await t.ledger.verify()).ok).toBe(true);
  });

  it("may be fixed only by the claim: a claimed earning's fee cannot change, and verify() names a cycle whose fee is not 5 % of its gross", async () => {
    const own = await openTestLedger();
    try {
      const owner = accountId('GFEEGUARD');
      await earn(own.ledger, owner, 3, 21n);
      const cycle = await own.ledger.openCycle(owner);
      await own.ledger.claimEarnings(cycle.id);
      await expect(own.ledger.db.query('UPDATE earnings SET fee = fee + 1, net = net - 1 WHERE publisher_owner = $1', [owner])).rejects.toThrow(
        /only an unset/,
      );
      // 3 calls of 21: 63, fee floor(3.15) = 3 on the cycle (per call it was 1 + 1 + 1 as well; the shares are 1, 1, 1).
      expect(await own.ledger.getCycle(cycle.id)).toMatchObject({ gross: 63n, fee: 3n, net: 60n });
      expect((await own.ledger.verify()).ok).toBe(true);
      await own.ledger.db.query('UPDATE settlement_cycles SET claimed_fee = 2, claimed_net = 61 WHERE id = $1', [cycle.id]);
      const report = await own.ledger.verify();
      expect(report.mismatches).toEqual([
        { kind: 'cycle', id: cycle.id, expected: 'earnings: 3 calls, gross 63, fee 3, net 60', actual: 'cycle: 3 calls, gross 63, fee 2, net 61' },
        { kind: 'cycle', id: cycle.id, expected: 'fee 3 (5 % of gross 63, rounded down)', actual: 'fee 2' },
      ]);
    } finally {
      await own.dispose();
    }
  });

  it('is brought to the cycle total for earnings claimed before schema 11, released cycles included', async () => {
    const { db, dispose } = await openLedgerAt(10);
    try {
      // As schema 10 left them: 1,000 calls of 21 claimed into a released cycle, 40 of 19 into an open one,
      // fee floored per call (1 and 0), and 5 calls of 21 not claimed.
      await db.query(`INSERT INTO settlement_cycles (publisher_owner, state) VALUES ('GA', 'done'), ('GB', 'open'), ('GC', 'open')`);
      const cycles = (await db.query(`SELECT id, publisher_owner FROM settlement_cycles ORDER BY publisher_owner`)).rows.map((r) => String(r.id));
      for (const [owner, cycleId, n, price] of [
        ['GA', cycles[0], 1_000, 21],
        ['GB', cycles[1], 40, 19],
        ['GC', null, 5, 21],
      ] as const) {
        await db.query(
          `INSERT INTO earnings (hold_id, payer_account_id, publisher_owner, service, gross, fee, net, cycle_id)
           SELECT gen_random_uuid(), 'p', $1, 's', $3::bigint, $3::bigint / 20, $3::bigint - $3::bigint / 20, $2::bigint FROM generate_series(1, $4::int)`,
          [owner, cycleId, price, n],
        );
        if (cycleId) {
          await db.query(
            `UPDATE settlement_cycles SET claimed_calls = $2, claimed_gross = $3, claimed_fee = $4, claimed_net = $3::bigint - $4::bigint WHERE id = $1`,
            [cycleId, n, n * price, n * Math.floor(price / 20)],
          );
        }
      }
      expect((await migrateLedger(db)).applied).toEqual(await migrationsAfter(10));
      const ledger = new Ledger(db);
      expect(await ledger.getCycle(cycles[0]!)).toMatchObject({ calls: 1_000, gross: 21_000n, fee: 1_050n, net: 19_950n });
      expect(await ledger.getCycle(cycles[1]!)).toMatchObject({ calls: 40, gross: 760n, fee: 38n, net: 722n });
      expect(await earningSums(ledger, 'GA')).toMatchObject({ fee: 1_050n, net: 19_950n, lowest: 1n, highest: 2n });
      expect(await earningSums(ledger, 'GB')).toMatchObject({ fee: 38n, net: 722n, lowest: 0n, highest: 1n });
      // Not claimed: unchanged until its claim.
      expect(await earningSums(ledger, 'GC')).toMatchObject({ fee: 5n, net: 100n });
      const report = await ledger.verify();
      expect(report.mismatches.filter((m) => m.kind === 'cycle')).toEqual([]);
    } finally {
      await dispose();
    }
  });
});
