// Settlement of 10,000 calls: `pnpm bench settlement`.
// Records N call earnings over P publishers through the ledger (the same
// hold + post a gateway call makes), then settles every publisher's cycle on
// the devnet through the escrow API and prints the time, the number of
// on-chain transactions and the exact payouts.
import { splitFee } from '@farebox/protocol';
import { startStack } from '../test/settlement-kit.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 10_000);
const PUBLISHERS = Number(process.env.BENCH_PUBLISHERS ?? 3);
const PRICE = 1_000n; // 0.0001 USDC per call

const stack = await startStack();
try {
  const { gw } = stack;
  const ledger = gw.core.ledger;
  const owners: string[] = [];
  for (let p = 0; p < PUBLISHERS; p++) owners.push((await stack.publish(`bench${p}`, '0.0001')).owner);
  const payer = await stack.user({ topup: 10 });
  const before = await Promise.all(owners.map((o) => stack.usdc(o)));

  const t0 = performance.now();
  const CONCURRENCY = 16;
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < CALLS; i = next++) {
        const owner = owners[i % PUBLISHERS]!;
        const { hold } = await ledger.hold(payer.id, PRICE, { callId: `bench_${i}`, service: `bench${i % PUBLISHERS}` });
        await ledger.post(hold.id, { publisherOwner: owner, service: `bench${i % PUBLISHERS}`, gross: PRICE });
      }
    }),
  );
  const recordMs = performance.now() - t0;

  const t1 = performance.now();
  const perPublisher: number[] = [];
  let transactions = 0;
  for (const owner of owners) {
    const s0 = performance.now();
    const r = (await gw.core.settlement.settle(owner)) as { settled: boolean; settlement: { transactions: unknown[] } | null };
    perPublisher.push(performance.now() - s0);
    transactions += r.settlement?.transactions.length ?? 0;
  }
  const settleMs = performance.now() - t1;

  let exact = true;
  for (let p = 0; p < PUBLISHERS; p++) {
    const calls = BigInt(Math.ceil((CALLS - p) / PUBLISHERS));
    const gross = calls * PRICE;
    const expected = gross - splitFee(gross).fee;
    const got = (await stack.usdc(owners[p]!)) - before[p]!;
    if (got !== expected) exact = false;
  }
  const sorted = [...perPublisher].sort((a, b) => a - b);
  console.log(`settlement of ${CALLS} calls over ${PUBLISHERS} publishers (${gw.core.db.kind})`);
  console.log(`  recording the calls (hold + post): ${(CALLS / (recordMs / 1000)).toFixed(0)} calls/s`);
  console.log(`  settling: ${(settleMs / 1000).toFixed(2)} s in all, median ${(sorted[Math.floor(sorted.length / 2)]! / 1000).toFixed(2)} s per publisher`);
  console.log(
    `  on-chain transactions: ${transactions} (${(transactions / PUBLISHERS).toFixed(1)} per publisher; ${((transactions / CALLS) * 1000).toFixed(2)} per 1000 calls)`,
  );
  console.log(`  payouts exact to the base unit: ${exact ? 'yes' : 'NO'}`);
  if (!exact) process.exitCode = 1;
} finally {
  await stack.close();
}
