// The fault suite: docs/deploy.md's deployment on this machine, faults
// injected mid-load, and what callers, operators and the money saw.
//   pnpm bench faults
// Starts its own PostgreSQL (initdb + postgres from /usr/lib/postgresql/<v>/bin,
// run as the postgres user when root) and Redis (redis-server) on spare ports,
// a devnet, a loopback service at 0.001 USD a call, two gateways as child
// processes (farebox-gateway from its sources, one database, one Redis, info
// logs as deployed), and BENCH_FAULT_CALLERS callers (default 32) paying
// through @farebox/client with an Idempotency-Key per call; a caller whose
// gateway is gone asks the other one under the same key. Then, one after the
// other: Redis killed (kill -9) for BENCH_FAULT_OUTAGE_MS (default 5000),
// PostgreSQL killed as long, and one gateway killed for good. Per fault it
// prints the answers callers saw (by status), /health/ready during the
// outage, what the gateways logged, the time to recover, the time until the
// money is whole (the holds and leases open at the fault resolved or
// released), the ledger's audit (verify(), through the operator API) and an
// exact money check (credits + held + spent = what the accounts were given).
// The services suite runs a bounded part of it (test/faults.pg.test.ts).
import { startFaultDeployment } from '../test/fault-kit.js';
import { startLoad } from '../test/fault-run.js';
import { gatewayFault, postgresFault, redisFault, report, type FaultResult } from '../test/fault-suite.js';

const CALLERS = Number(process.env.BENCH_FAULT_CALLERS ?? 32);
const OUTAGE_MS = Number(process.env.BENCH_FAULT_OUTAGE_MS ?? 5000);
/** The longest wait for a recovery and for whole money. */
const BOUND_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (line: string) => console.log(`[${new Date().toISOString().slice(11, 23)}] ${line}`);

const t0 = Date.now();
log('starting PostgreSQL, Redis, the devnet, the service and two gateways...');
const d = await startFaultDeployment({ gateways: 2, accounts: 8, callTimeoutMs: 3000 });
log(
  `deployment up in ${((Date.now() - t0) / 1000).toFixed(1)} s: gateways ${d.gateways.map((g) => g.url).join(', ')}; PostgreSQL ${d.postgres.url}; Redis ${d.redis.url}`,
);
const load = startLoad(d, CALLERS);
const results: FaultResult[] = [];
try {
  await sleep(5000);
  log(`warm: ${load.answers.length} answers in 5 s from ${CALLERS} callers`);
  const o = { outageMs: OUTAGE_MS, boundMs: BOUND_MS, log };
  for (const run of [() => redisFault(d, load, o), () => postgresFault(d, load, o), () => gatewayFault(d, load, o, 1)]) {
    const r = await run();
    results.push(r);
    console.log(report(r).join('\n'));
    await sleep(3000);
  }
} finally {
  await load.stop();
  await d.close();
}

console.log('\n=== summary');
const secs = (ms: number | undefined) => (ms === undefined ? `> ${BOUND_MS / 1000} s` : `${(ms / 1000).toFixed(1)} s`);
console.log(
  [
    'fault'.padEnd(28),
    'answers'.padStart(8),
    'not 200'.padStart(8),
    'recover'.padStart(9),
    'money whole'.padStart(12),
    'verify'.padStart(7),
    'exact'.padStart(6),
  ].join(' '),
);
for (const r of results) {
  console.log(
    [
      r.name.padEnd(28),
      String(r.answers.length).padStart(8),
      String(r.answers.filter((a) => a.status !== 200).length).padStart(8),
      secs(r.recoverMs).padStart(9),
      secs(r.wholeMs).padStart(12),
      (r.audit.ok ? 'ok' : 'NOT ok').padStart(7),
      (r.money.exact ? 'yes' : 'NO').padStart(6),
    ].join(' '),
  );
}
const last = results.at(-1)?.money;
if (last) {
  console.log(
    `over the run: ${load.answers.length} answers, ${last.charged} calls charged; twice under one key: ${last.doubleCharged}; charged with no 200 seen by its caller: ${last.chargedUnseen}; charged though refused: ${last.chargedRefused}`,
  );
}
process.exit(results.every((r) => r.audit.ok && r.money.exact) ? 0 : 1);
