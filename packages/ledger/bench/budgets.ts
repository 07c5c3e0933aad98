// What a credential budget adds to a call at the ledger, on PostgreSQL
// (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test): hold+post
// pairs with a budget on each hold (the budget batch of budget-batch.ts, one
// budget per account as the gateway bench's policy keys have) against pairs
// without one (migration 0012's farebox_hold_batch), in turns ABBA, 32 in
// flight over 16 accounts. Prints the CPU per pair of this ledger's own
// PostgreSQL backends (found by their application_name, so other work on the
// server is not counted) and of this process, and the ratio budget/none.
//   pnpm exec tsx packages/ledger/bench/budgets.ts
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { Budget, Ledger } from '../src/index.js';

const SOURCE_CONDITION = '--conditions=@farebox/source';
if (!process.execArgv.includes(SOURCE_CONDITION)) {
  const result = spawnSync(process.execPath, [SOURCE_CONDITION, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
const { openLedger, TOPUP_MAX } = await import('../src/index.js');

const PAIRS = Number(process.env.BENCH_PAIRS ?? 6_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const IN_FLIGHT = 32;
const PRICE = 1_000n;
const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const schema = `ledger_budget_bench_${process.pid}`;
const app = schema;

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** CPU ms of the ledger's backends (their pids read from pg_stat_activity by application_name). */
async function backendCpuMs(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [app]);
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return ticks * 10; // USER_HZ is 100 on Linux
}

async function run(ledger: Ledger, accounts: string[], withBudget: boolean, seq: { n: number }): Promise<void> {
  let next = 0;
  const period = `day:${new Date().toISOString().slice(0, 10)}`;
  const worker = async () => {
    while (next < PAIRS) {
      const i = next++;
      const account = accounts[i % accounts.length]!;
      const budget: Budget = { credential: `key_${account}`, period, limit: TOPUP_MAX };
      const { hold } = await ledger.hold(account, PRICE, { callId: `b${seq.n++}`, service: 'bench', ...(withBudget ? { budget } : {}) });
      await ledger.post(hold.id, { publisherOwner: 'GBENCH', service: 'bench', gross: PRICE });
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
}

const admin = new pg.Client({ connectionString: url });
await admin.connect();
const ledger = await openLedger({ url: `${url}${url.includes('?') ? '&' : '?'}application_name=${app}`, schema, poolSize: 10 });
try {
  await ledger.joinInstance('budget-bench');
  const tag = randomBytes(3).toString('hex');
  const accounts = Array.from({ length: 16 }, (_, i) => `acct_${tag}_${i}`);
  for (const id of accounts) {
    await ledger.openAccount(id);
    await ledger.topup(id, TOPUP_MAX);
  }
  const seq = { n: 0 };
  await run(ledger, accounts, false, seq); // warm-up: both statements prepared on every connection
  await run(ledger, accounts, true, seq);
  const side = { none: { pg: [] as number[], node: [] as number[] }, budget: { pg: [] as number[], node: [] as number[] } };
  for (let turn = 0; turn < ROUNDS * 4; turn++) {
    const withBudget = [0, 1, 1, 0][turn % 4] === 1;
    const pg0 = await backendCpuMs(admin);
    const node0 = process.cpuUsage();
    await run(ledger, accounts, withBudget, seq);
    const node = process.cpuUsage(node0);
    const s = side[withBudget ? 'budget' : 'none'];
    s.pg.push(((await backendCpuMs(admin)) - pg0) / PAIRS);
    s.node.push((node.user + node.system) / 1000 / PAIRS);
  }
  const line = (xs: number[]) => `${median(xs).toFixed(4)} ms (${xs.map((x) => x.toFixed(4)).join(', ')})`;
  console.log(`CPU per hold+post pair, ${IN_FLIGHT} in flight over 16 accounts, median of ${ROUNDS * 2} turns a side of ${PAIRS} pairs`);
  console.log(`  PostgreSQL backends without a budget ${line(side.none.pg)}`);
  console.log(`  PostgreSQL backends with a budget    ${line(side.budget.pg)}`);
  console.log(`  this process without a budget        ${line(side.none.node)}`);
  console.log(`  this process with a budget           ${line(side.budget.node)}`);
  console.log(
    `  budget/none: PostgreSQL ${(median(side.budget.pg) / median(side.none.pg)).toFixed(3)}, this process ${(median(side.budget.node) / median(side.none.node)).toFixed(3)}`,
  );
  const report = await ledger.verify();
  if (!report.ok) throw new Error(`ledger does not verify after the bench: ${JSON.stringify(report.mismatches.slice(0, 3))}`);
} finally {
  await ledger.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
