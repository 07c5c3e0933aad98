// Hold+post throughput of the ledger on embedded PGlite and, when reachable,
// on PostgreSQL (DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test):
// every call on one hot account vs calls spread over many accounts; then, on
// PostgreSQL, its CPU per call by callers in flight (the batches' size), what
// settlement's bookkeeping costs per tick as a cycle grows,
// and what a call writes and costs once the ledger has grown (BENCH_GROWN_CALLS,
// default 1,000,000 calls written straight into its tables).
//   pnpm exec tsx packages/ledger/bench/ledger.ts
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Ledger } from '../src/index.js';

// Workspace packages resolve to their TypeScript sources through the
// '@farebox/source' condition; without a build, re-run with it.
const SOURCE_CONDITION = '--conditions=@farebox/source';
if (!process.execArgv.includes(SOURCE_CONDITION)) {
  const result = spawnSync(process.execPath, [SOURCE_CONDITION, ...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}
const { openLedger, TOPUP_MAX } = await import('../src/index.js');

const ROUNDS = 3;
const PRICE = 1_000n;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function prepareAccounts(ledger: Ledger, prefix: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `${prefix}_${i}`);
  for (const id of ids) {
    await ledger.openAccount(id);
    await ledger.topup(id, TOPUP_MAX);
  }
  return ids;
}

/** `calls` hold+post pairs with `concurrency` in flight; returns pairs per second. */
async function run(ledger: Ledger, accounts: string[], calls: number, concurrency: number): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < calls) {
      const i = next++;
      const account = accounts[i % accounts.length]!;
      const { hold } = await ledger.hold(account, PRICE, { callId: `b${i}`, service: 'bench' });
      await ledger.post(hold.id, { publisherOwner: 'GBENCH', service: 'bench', gross: PRICE });
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return calls / ((performance.now() - started) / 1000);
}

async function bench(label: string, ledger: Ledger, calls: number, concurrency: number): Promise<void> {
  const hot = await prepareAccounts(ledger, `hot_${randomBytes(3).toString('hex')}`, 1);
  const many = await prepareAccounts(ledger, `many_${randomBytes(3).toString('hex')}`, 200);
  await run(ledger, many, Math.min(200, calls), concurrency); // warm-up
  const hotRates: number[] = [];
  const manyRates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    hotRates.push(await run(ledger, hot, calls, concurrency));
    manyRates.push(await run(ledger, many, calls, concurrency));
  }
  const h = median(hotRates);
  const m = median(manyRates);
  console.log(
    `${label.padEnd(36)} one hot account ${h.toFixed(0).padStart(6)} hold+post/s | 200 accounts ${m.toFixed(0).padStart(6)} hold+post/s | hot/many ${(h / m).toFixed(2)}`,
  );
  const report = await ledger.verify();
  if (!report.ok) throw new Error(`ledger does not verify after the bench: ${JSON.stringify(report.mismatches.slice(0, 3))}`);
}

/** CPU milliseconds of this process so far. */
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * What a settlement tick costs as its cycle grows: claiming the calls of a
 * tick into the cycle as a funding batch (wall time, this
 * process's CPU, the longest event-loop stall), then reading the cycle, which
 * the settler does several times a tick, against summing its earnings (what
 * reading it cost before the cycle kept its totals, migration 0006).
 */
async function settlementBookkeeping(ledger: Ledger): Promise<void> {
  const { monitorEventLoopDelay } = await import('node:perf_hooks');
  const TICK = 10_000;
  const owner = `GSETTLE_${randomBytes(3).toString('hex')}`;
  const payers = await prepareAccounts(ledger, `payer_${randomBytes(3).toString('hex')}`, 16);
  const cycle = await ledger.openCycle(owner);
  console.log(`settlement bookkeeping on PostgreSQL: ticks of ${TICK} calls into one cycle`);
  for (let tick = 1; tick <= 4; tick++) {
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < TICK) {
          const i = next++;
          const { hold } = await ledger.hold(payers[i % payers.length]!, PRICE, { callId: `s${tick}_${i}`, service: 'bench' });
          await ledger.post(hold.id, { publisherOwner: owner, service: 'bench', gross: PRICE });
        }
      }),
    );
    const stall = monitorEventLoopDelay({ resolution: 1 });
    stall.enable();
    const t0 = performance.now();
    const c0 = cpuMs();
    // As the settler does: the claim and its funding batch in one statement.
    const claimed = await ledger.claimEarnings(cycle.id, { batch: true });
    const batch = claimed.batch;
    const tickMs = performance.now() - t0;
    const tickCpu = cpuMs() - c0;
    stall.disable();
    if (claimed.claimed !== TICK || batch?.amount !== PRICE * BigInt(TICK))
      throw new Error(`tick ${tick}: claimed ${claimed.claimed}, batch ${String(batch?.amount)}`);
    const reads: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t = performance.now();
      const read = await ledger.getCycle(cycle.id);
      reads.push(performance.now() - t);
      if (read.calls !== tick * TICK) throw new Error(`cycle reads ${read.calls} calls, expected ${tick * TICK}`);
    }
    const sums: number[] = [];
    for (let r = 0; r < 5; r++) {
      const t = performance.now();
      await ledger.db.query(
        `SELECT (SELECT count(*) FROM earnings WHERE cycle_id = $1), (SELECT sum(gross) FROM earnings WHERE cycle_id = $1),
                (SELECT sum(fee) FROM earnings WHERE cycle_id = $1), (SELECT sum(net) FROM earnings WHERE cycle_id = $1)`,
        [cycle.id],
      );
      sums.push(performance.now() - t);
    }
    console.log(
      `  cycle of ${String(tick * TICK).padStart(6)} calls: claim + batch ${tickMs.toFixed(0)} ms (this process ${tickCpu.toFixed(0)} ms of CPU, longest stall ${(stall.max / 1e6).toFixed(1)} ms) | read the cycle ${median(reads).toFixed(1)} ms, sum its earnings ${median(sums).toFixed(1)} ms (medians of 5)`,
    );
  }
  const report = await ledger.verify();
  if (!report.ok) throw new Error(`ledger does not verify after settlement bookkeeping: ${JSON.stringify(report.mismatches.slice(0, 3))}`);
}

/** CPU clock ticks of each PostgreSQL process of this machine (backends, WAL writer, checkpointer), by pid. */
function postgresTicks(): Map<string, number> {
  const ticks = new Map<string, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    if (!stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).startsWith('postgres')) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks.set(entry, Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/** CPU milliseconds PostgreSQL's processes used between two readings (a process gone meanwhile is not counted). */
function postgresCpuMs(before: Map<string, number>, after: Map<string, number>): number {
  let ticks = 0;
  for (const [pid, t] of after) ticks += t - (before.get(pid) ?? 0);
  return ticks * 10; // USER_HZ is 100 on Linux
}

/**
 * PostgreSQL's CPU per hold+post pair as the number of callers in flight
 * grows. A statement has a fixed cost (waking its backend, starting the
 * executor, the constraints of each table it writes) besides its rows, and
 * group commit spreads it over the calls that arrive while the previous
 * statement runs: the more callers in flight, the larger the batches.
 */
async function byCallersInFlight(ledger: Ledger): Promise<void> {
  const payers = await prepareAccounts(ledger, `flight_${randomBytes(3).toString('hex')}`, 16);
  const PAIRS = 4_000;
  console.log(`PostgreSQL CPU per hold+post pair by callers in flight (16 accounts, ${PAIRS} pairs a round, median of ${ROUNDS})`);
  for (const inFlight of [4, 8, 16, 32]) {
    await run(ledger, payers, 500, inFlight); // warm-up
    const rates: number[] = [];
    const cpu: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const c0 = postgresTicks();
      rates.push(await run(ledger, payers, PAIRS, inFlight));
      cpu.push(postgresCpuMs(c0, postgresTicks()) / PAIRS);
    }
    console.log(
      `  ${String(inFlight).padStart(2)} in flight   ${median(rates).toFixed(0).padStart(6)} pairs/s   PostgreSQL CPU ${median(cpu).toFixed(3)} ms per pair (${cpu.map((c) => c.toFixed(3)).join(', ')})`,
    );
  }
}

// `n` posted calls of PRICE from `payer` written straight into the tables, as
// the ledger's statements leave them (a top-up of their sum first, so the
// credits do not move and verify() holds).
const GROW_SQL = `
WITH t AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, reference)
  VALUES ($1, 'topup', $2::bigint * $3::bigint, $2::bigint * $3::bigint, 0, 'bench: grown ledger')
), h AS (
  INSERT INTO holds (account_id, amount, state, call_id, service, posted_amount, expires_at, resolved_at)
  SELECT $1, $3::bigint, 'posted', 'grown_' || g, 'bench', $3::bigint, now(), now() FROM generate_series(1, $2::int) g
  RETURNING id, account_id
), jh AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'hold', $3::bigint, -$3::bigint, $3::bigint, id FROM h
), jp AS (
  INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, hold_id)
  SELECT account_id, 'post', $3::bigint, 0, -$3::bigint, id FROM h
)
INSERT INTO earnings (hold_id, payer_account_id, publisher_owner, service, gross, fee, net)
SELECT id, account_id, 'GGROWN', 'bench', $3::bigint, $4::bigint, $5::bigint FROM h`;

/**
 * A ledger that has grown: holds, journal and earnings already hold `grown`
 * calls. What a hold+post pair then writes to the WAL, and costs PostgreSQL's
 * processes in CPU, in the minute after a checkpoint, when the first change of
 * each index page since the checkpoint puts the whole page in the WAL.
 */
async function grownLedger(ledger: Ledger, grown: number): Promise<void> {
  // CHECKPOINT needs a superuser or the pg_checkpoint role: without it there is nothing to measure.
  try {
    await ledger.db.query('CHECKPOINT');
  } catch (error) {
    console.log(`a grown ledger: skipped, CHECKPOINT refused (${(error as Error).message}); it needs a superuser or the pg_checkpoint role`);
    return;
  }
  const { splitFee } = await import('@farebox/protocol');
  const { fee, net } = splitFee(PRICE);
  const payers = await prepareAccounts(ledger, `grown_${randomBytes(3).toString('hex')}`, 16);
  const t0 = performance.now();
  for (let done = 0; done < grown; done += 100_000) {
    await ledger.db.query(GROW_SQL, [
      payers[(done / 100_000) % payers.length],
      Math.min(100_000, grown - done),
      PRICE.toString(),
      fee.toString(),
      net.toString(),
    ]);
  }
  await ledger.db.query('VACUUM ANALYZE holds, journal, earnings');
  const growMs = performance.now() - t0;
  const PAIRS = 10_000;
  const wal: number[] = [];
  const cpu: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    await ledger.db.query('CHECKPOINT');
    const { rows } = await ledger.db.query('SELECT pg_current_wal_lsn()::text AS lsn');
    const c0 = postgresTicks();
    await run(ledger, payers, PAIRS, 16);
    const c1 = postgresTicks();
    const { rows: after } = await ledger.db.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn) AS bytes', [rows[0]!.lsn]);
    wal.push(Number(after[0]!.bytes) / PAIRS);
    cpu.push(postgresCpuMs(c0, c1) / PAIRS);
  }
  console.log(
    `a ledger grown to ${grown} calls (${(growMs / 1000).toFixed(0)} s to grow), ${PAIRS} hold+post pairs after a checkpoint: WAL ${median(wal).toFixed(0)} bytes per pair (${wal.map((w) => w.toFixed(0)).join(', ')}), PostgreSQL CPU ${median(cpu).toFixed(3)} ms per pair (${cpu.map((c) => c.toFixed(3)).join(', ')})`,
  );
  const report = await ledger.verify();
  if (!report.ok) throw new Error(`ledger does not verify after growing: ${JSON.stringify(report.mismatches.slice(0, 3))}`);
}

console.log(`hold+post pairs per second, median of ${ROUNDS} rounds (holds and posts that arrive together share a statement and a commit: group commit)`);

const dataDir = await mkdtemp(join(tmpdir(), 'farebox-bench-'));
try {
  const lite = await openLedger({ dataDir, env: {} });
  try {
    await bench('PGlite (in-process, 1 conn)', lite, 600, 4);
  } finally {
    await lite.close();
  }
} finally {
  await rm(dataDir, { recursive: true, force: true });
}

const url = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';
const schema = `ledger_bench_${process.pid}`;
let ledger: Ledger | undefined;
try {
  ledger = await openLedger({ url, schema, poolSize: 16 });
} catch (error) {
  console.log(`${'PostgreSQL'.padEnd(36)} not reachable at ${url.replace(/:[^:@/]*@/, ':***@')} (${(error as Error).message}); skipped`);
}
if (ledger) {
  try {
    await bench('PostgreSQL (pool 16, 16 in flight)', ledger, 1_500, 16);
    await byCallersInFlight(ledger);
    await settlementBookkeeping(ledger);
    await grownLedger(ledger, Number(process.env.BENCH_GROWN_CALLS ?? 1_000_000));
  } finally {
    await ledger.close();
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}
