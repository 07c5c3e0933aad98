// Gateway call throughput and added latency, against a no-op service, and the
// ceiling in the same run: an HTTP server doing one durable single-statement
// debit per request (bench/debit-server.mjs, node:http + pg), same load shape.
//   pnpm bench gateway            (PostgreSQL at DATABASE_URL when reachable, else PGlite)
//   pnpm build first: the gateway runs as deployed, its built dist/main.js with
//   NODE_ENV=production, in a child process (its own core); the load generator
//   and the no-op service run here. Prints medians, p99, calls/s and ratios.
//   BENCH_GATEWAY_MAIN=<another checkout>/apps/gateway/dist/main.js benches that
//   build instead (before/after on the same machine, docs/performance.md).
//   BENCH_COMPARE_MAIN=<another build's dist/main.js> runs that build beside
//   this one and only compares throughput, in ABBA turns (80 pairs of 500 ms):
//   on a shared machine whose speed drifts by a quarter from one second to the
//   next, interleaved turns see the same moments. Each build has its own
//   database schema (or PGlite directory), accounts and keys.
//   BENCH_KEY_POLICY=1 compares keys with a spending policy (a limit, an allowed
//   service, a per-call maximum) with keys without one on the same accounts, in
//   ABBA turns (80 pairs of 500 ms), and prints the ratio policy/none (target
//   >= 0.95) with its 90 % interval, CPU and write transactions per call.
//   BENCH_CHANNEL=1 compares MPP channel calls (no account: a voucher per call, CONCURRENCY
//   channels, a worker each) with credit calls, in the same ABBA turns: channel-mode.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as netServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { postgresUrl } from './postgres.js';
import { Keypair } from '@stellar/stellar-sdk';
import { Pool } from 'undici';
import { createRegistryClient, keypairSigner, resolveNetwork } from '@farebox/stellar';
import { channelMode } from './channel-mode.js';
import { addInto, cpuDelta, cpuPerCall, medianOf, pairedSummary, spreadOf } from './stats.js';

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 6000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
// The paired modes (BENCH_KEY_POLICY, BENCH_COMPARE_MAIN): short turns, many of them (80 pairs of 500 ms
// unless BENCH_DURATION_MS / BENCH_ROUNDS say otherwise). A pair's two turns see the same second of a
// machine whose speed moves by a quarter from one second to the next: 10 pairs of 4 s gave one build
// against an older one 0.885, 80 pairs of 500 ms 0.985 on the same machine minutes later.
const PAIRED_TURN_MS = Number(process.env.BENCH_DURATION_MS ?? 500);
const PAIRED_ROUNDS = Number(process.env.BENCH_ROUNDS ?? 40);

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ACCOUNTS = 16;
/** Database connections of the gateway (its default) and of the debit server alike. */
const POOL_SIZE = 10;

async function freePort() {
  const s = netServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

/** The application_name of the bench's own database connections (the gateways', the debit server's). */
const BENCH_APP = 'farebox-bench';
/** The PostgreSQL backends of those connections, read before each CPU reading (undefined on PGlite). */
let benchBackends: Set<number> | undefined;

/**
 * A client backend of another session (other work on a shared machine, this bench's own admin
 * connection): not part of a call's cost. The server's own processes (WAL writer, checkpointer,
 * autovacuum) count, since the bench's writes make their work.
 */
function otherSession(pid: number): boolean {
  if (!benchBackends || benchBackends.has(pid)) return false;
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
    return /^postgres: \S+ \S+ (\[local\]|\S+\(\d+\))/.test(title);
  } catch {
    return false;
  }
}

/**
 * CPU seconds used so far, per kind of process on this machine (Linux /proc;
 * empty elsewhere): where a call's CPU goes when every process shares the
 * same cores.
 */
function cpuByProcess(gatewayPids: number[], devnetPid: number | undefined, ceilingPid?: number): Map<string, number> {
  const out = new Map<string, number>();
  if (!existsSync('/proc/self/stat')) return out;
  const add = (k: string, v: number) => out.set(k, (out.get(k) ?? 0) + v);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
    const pid = Number(entry);
    if (gatewayPids.includes(pid)) {
      add('gateway', seconds);
      // Its event loop alone (the main thread): what bounds one gateway's calls per second.
      try {
        const main = readFileSync(`/proc/${entry}/task/${entry}/stat`, 'utf8');
        const f = main.slice(main.lastIndexOf(')') + 2).split(' ');
        add('gateway event loop', (Number(f[11]) + Number(f[12])) / 100);
      } catch {
        // exited between the two reads
      }
    } else if (pid === devnetPid) add('devnet', seconds);
    else if (pid === ceilingPid) add('debit server', seconds);
    else if (pid === process.pid) add('load generator + no-op service', seconds);
    else if (comm === 'postgres') add(otherSession(pid) ? 'other PostgreSQL sessions' : 'PostgreSQL', seconds);
    else if (comm.startsWith('redis-server')) add('Redis', seconds);
  }
  return out;
}

/**
 * Seconds a thread has spent on a core and runnable but waiting for one
 * (`/proc/<pid>/task/<tid>/schedstat`; undefined without it). On these shared
 * cores the gateway's main thread is also kept off its core by the processes
 * its own writes wake (PostgreSQL, the load generator): the waiting share.
 */
function schedOf(pid: number): { run: number; wait: number } | undefined {
  try {
    const [run, wait] = readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
    return { run: run! / 1e9, wait: wait! / 1e9 };
  } catch {
    return undefined;
  }
}

function pct(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Busy, stolen and total CPU ticks of the whole machine so far (Linux
 * /proc/stat; undefined elsewhere). Stolen: time the virtual machine's cores
 * wanted to run and the host ran something else; no process here sees it as
 * its CPU time, but every round trip waits for it.
 */
function machineTicks(): { busy: number; steal: number; total: number } | undefined {
  if (!existsSync('/proc/stat')) return undefined;
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const steal = cpu[7] ?? 0;
  // idle and iowait: time no process could use.
  return { busy: total - cpu[3]! - cpu[4]! - steal, steal, total };
}

async function load(
  pool: Pool,
  path: string,
  headersFor: (i: number) => Record<string, string>,
  body: (i: number) => string,
  concurrency: number,
  durationMs: number,
  steps?: Map<string, number[]>,
) {
  const lat: number[] = [];
  let errors = 0;
  let n = 0;
  const end = Date.now() + durationMs;
  const started = performance.now();
  const ticks0 = machineTicks();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const i = n++;
        const t0 = performance.now();
        const res = await pool.request({ method: 'POST', path, headers: { 'content-type': 'application/json', ...headersFor(i) }, body: body(i) });
        // One answer in 16 is read for its trace: where a call's time goes under load.
        if (steps && i % 16 === 0 && res.statusCode === 200) addSteps(steps, await res.body.text());
        else await res.body.dump();
        if (res.statusCode !== 200) errors++;
        lat.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const ticks1 = machineTicks();
  lat.sort((a, b) => a - b);
  const share = (k: 'busy' | 'steal') => (ticks0 && ticks1 ? (ticks1[k] - ticks0[k]) / (ticks1.total - ticks0.total) : NaN);
  return { rps: lat.length / seconds, p50: pct(lat, 50), p99: pct(lat, 99), errors, n: lat.length, busy: share('busy'), steal: share('steal') };
}

function addSteps(steps: Map<string, number[]>, text: string) {
  for (const step of (JSON.parse(text) as { trace: { steps: Array<{ name: string; durationMs: number }> } }).trace.steps) {
    (steps.get(step.name) ?? steps.set(step.name, []).get(step.name)!).push(step.durationMs);
  }
}

const stepMedians = (steps: Map<string, number[]>) =>
  [...steps].map(
    ([name, v]) =>
      [
        name,
        pct(
          v.sort((a, b) => a - b),
          50,
        ),
      ] as const,
  );

interface Seq {
  p50: number;
  p99: number;
  stepP50: Array<readonly [string, number]>;
}

/** One request to each target in turn, repeated for `durationMs`: paired samples of sequential latency. */
async function sequential(
  targets: Array<{ pool: Pool; path: string; headers: Record<string, string> | (() => Record<string, string>); body: string; steps?: boolean }>,
  durationMs: number,
): Promise<Seq[]> {
  const lat = targets.map(() => [] as number[]);
  const steps = new Map<string, number[]>();
  const end = Date.now() + durationMs;
  while (Date.now() < end) {
    for (const [i, t] of targets.entries()) {
      const t0 = performance.now();
      const headers = typeof t.headers === 'function' ? t.headers() : t.headers;
      const res = await t.pool.request({ method: 'POST', path: t.path, headers: { 'content-type': 'application/json', ...headers }, body: t.body });
      const text = await res.body.text();
      lat[i]!.push(performance.now() - t0);
      if (t.steps && res.statusCode === 200) addSteps(steps, text);
    }
  }
  return targets.map((t, i) => {
    const xs = lat[i]!.sort((a, b) => a - b);
    return { p50: pct(xs, 50), p99: pct(xs, 99), stepP50: t.steps ? stepMedians(steps) : [] };
  });
}

// Answers as a provider built with @farebox/provider does: it says it verifies v1 and v2
// certificates (so the gateway batch-signs), and does not verify them (the service's work is not benched).
const noop = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11, 'farebox-certificate-versions': 'v1, v2' });
    res.end('{"ok":true}');
  });
});
noop.keepAliveTimeout = 60_000;
await new Promise<void>((r) => noop.listen(0, '127.0.0.1', r));
const servicePort = (noop.address() as AddressInfo).port;

const dbUrl = await postgresUrl();
const redisUp = await fetch('http://127.0.0.1:6379').then(
  () => true,
  (e: { cause?: { code?: string } }) => e?.cause?.code !== 'ECONNREFUSED',
);
const schema = `bench_${process.pid}`;
// A build compared with this one (BENCH_COMPARE_MAIN) gets a database schema of its own (its
// migrations, indexes and tables), so builds that change the ledger's schema compare too.
const otherSchema = `${schema}_other`;
// As deployed: the built output (`pnpm build`), no source transpiler.
const main = process.env.BENCH_GATEWAY_MAIN ?? fileURLToPath(new URL('../dist/main.js', import.meta.url));
const compareMain = process.env.BENCH_COMPARE_MAIN;
// The devnet's command, found through the package the gateway depends on (its `bin`), not by a path into another workspace.
const devnetManifest = createRequire(import.meta.url).resolve('@farebox/devnet/package.json');
const devnetCli = join(dirname(devnetManifest), (JSON.parse(readFileSync(devnetManifest, 'utf8')) as { bin: Record<string, string> }).bin['farebox-devnet']!);
const debitServer = fileURLToPath(new URL('./debit-server.mjs', import.meta.url));
for (const file of [main, devnetCli, ...(compareMain ? [compareMain] : [])]) {
  if (!existsSync(file)) {
    console.error(`${file} is missing: run pnpm build first (the bench runs the built gateway)`);
    process.exit(1);
  }
}
const children: ChildProcess[] = [];
const gatewayPids: number[] = [];
const keystoreKey = randomBytes(32).toString('hex');

function waitLine(child: ChildProcess, re: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (d: Buffer) => {
      out += d;
      const m = re.exec(out);
      if (!m) return;
      resolve(m[1]!);
      // From here on the gateway's log lines are read and dropped, as a log shipper would.
      child.stdout!.off('data', onData);
      child.stdout!.on('data', () => undefined);
    };
    child.stdout!.on('data', onData);
    child.once('exit', (c) => reject(new Error(`exited ${c}: ${out}`)));
  });
}

if (dbUrl) {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  if (compareMain) await c.query(`CREATE SCHEMA IF NOT EXISTS ${otherSchema}`);
  await c.end();
}

// One devnet for every gateway (as docs/deploy.md runs it).
const devnetPort = await freePort();
const devnet = spawn(process.execPath, [devnetCli, '--port', String(devnetPort), '--close', '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
children.push(devnet);
await new Promise((r) => setTimeout(r, 200));
for (let i = 0; i < 100; i++) {
  if (
    await fetch(`http://127.0.0.1:${devnetPort}/`).then(
      (r) => r.ok,
      () => false,
    )
  )
    break;
  await new Promise((r) => setTimeout(r, 200));
}
const devnetUrl = `http://127.0.0.1:${devnetPort}`;

async function startInstance(logLevel = 'info', entry = main, inSchema = schema): Promise<string> {
  const port = await freePort();
  const extra = process.env.BENCH_GATEWAY_NODE_ARGS ? process.env.BENCH_GATEWAY_NODE_ARGS.split(' ') : [];
  const child = spawn(process.execPath, [...extra, entry], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'production',
      PORT: String(port),
      FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-bench-')),
      STELLAR_NETWORK: 'local',
      FAREBOX_DEVNET_URL: devnetUrl,
      FAREBOX_KEYSTORE_KEY: keystoreKey,
      // JSON logs to the pipe (info: a line per request and per call), as deployed.
      FAREBOX_LOG_LEVEL: logLevel,
      // The no-op service listens on 127.0.0.1.
      FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true',
      FAREBOX_AUTH_RATE_LIMIT: '1000',
      FAREBOX_ACCOUNT_RATE_LIMIT: '10000000',
      FAREBOX_DB_POOL_SIZE: String(POOL_SIZE),
      ...(redisUp ? { FAREBOX_REDIS_URL: 'redis://127.0.0.1:6379' } : {}),
      ...(dbUrl ? { DATABASE_URL: `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}options=-c%20search_path%3D${inSchema}&application_name=${BENCH_APP}` } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  gatewayPids.push(child.pid!);
  return waitLine(child, /Farebox gateway\s+(\S+)/);
}

async function cleanUp() {
  for (const c of children) c.kill('SIGTERM');
  noop.close();
  if (dbUrl) {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.query(`DROP SCHEMA IF EXISTS ${otherSchema} CASCADE`);
    await c.end();
  }
}

try {
  const first = await startInstance();
  const network = resolveNetwork({ network: 'local', devnetUrl, env: {} });
  const owner = Keypair.random();
  await fetch(`${devnetUrl}/friendbot?addr=${owner.publicKey()}`);
  await createRegistryClient(network).register(keypairSigner(owner.secret()), {
    service: 'noop',
    pricePerCall: 1n,
    endpoint: `http://127.0.0.1:${servicePort}/`,
    description: 'no-op',
  });

  /** ACCOUNTS sign-ups on the gateway at `base`, an API key each. */
  async function signUpKeys(base: string): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const s = await fetch(`${base}/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `bench${i}@example.com`, password: 'bench password' }),
      });
      const cookie = s.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const { csrf_token } = (await s.json()) as { csrf_token: string };
      const k = await fetch(`${base}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
        body: JSON.stringify({ name: 'bench' }),
      });
      out.push(((await k.json()) as { key: string }).key);
    }
    return out;
  }
  const keys = await signUpKeys(first);
  async function waitCatalog(base: string, key = keys[0]) {
    for (;;) {
      const list = (await (await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${key}` } })).json()) as Array<{ service: string }>;
      if (list.some((s) => s.service === 'noop')) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await waitCatalog(first);

  // The ceiling: the bare durable debit, its own process, same database and load shape.
  let ceilingPid: number | undefined;
  let ceilingUrl: string | undefined;
  // (Not in a comparison of two builds, which measures throughput only.)
  if (dbUrl && !compareMain) {
    const debitUrl = `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}application_name=${BENCH_APP}`;
    const child = spawn(process.execPath, [debitServer, debitUrl, schema, String(ACCOUNTS), String(POOL_SIZE)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    ceilingPid = child.pid;
    ceilingUrl = await waitLine(child, /debit server\s+(\S+)/);
  }
  const admin = dbUrl ? new pg.Client({ connectionString: dbUrl }) : undefined;
  await admin?.connect();
  const cpuNow = async () => {
    if (admin) {
      const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [BENCH_APP]);
      benchBackends = new Set(rows.map((r) => r.pid));
    }
    return cpuByProcess(gatewayPids, devnet.pid, ceilingPid);
  };

  const pools = [new Pool(first, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 })];
  const direct = new Pool(`http://127.0.0.1:${servicePort}`, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  const ceiling = ceilingUrl ? new Pool(ceilingUrl, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 }) : undefined;
  const callBody = () => '{"service":"noop","payload":{}}';
  const byKeyOf = (ks: string[]) => (i: number) => ({ authorization: `Bearer ${ks[i % ACCOUNTS]}` });
  const byKey = byKeyOf(keys);
  const byAccount = (i: number) => ({ 'x-account': String(i % ACCOUNTS) });
  const spread = (ps: Pool[]) =>
    ({
      request: (opts: Parameters<Pool['request']>[0]) => ps[Math.floor(Math.random() * ps.length)]!.request(opts),
    }) as unknown as Pool;
  await load(pools[0]!, '/v1/call', byKey, callBody, 8, 1500);

  if (process.env.BENCH_CHANNEL === '1') {
    await channelMode({
      base: first,
      pool: pools[0]!,
      devnetUrl,
      network,
      keys,
      body: callBody(),
      concurrency: CONCURRENCY,
      turnMs: PAIRED_TURN_MS,
      rounds: PAIRED_ROUNDS,
      cpuNow,
      admin,
    });
    await pools[0]!.close();
    await cleanUp();
    process.exit(0);
  }

  if (process.env.BENCH_KEY_POLICY === '1') {
    // Spending policies (docs/api.md): the same accounts, a second key each with a policy
    // (a daily limit it never reaches, the service allowed, a per-call maximum), in turns
    // ABBA with the keys without one (PAIRED_TURN_MS, PAIRED_ROUNDS); the ratio is policy/none (target >= 0.95).
    const policyKeys: string[] = [];
    for (const key of keys) {
      const k = await fetch(`${first}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ name: 'bench-policy', limit_usd: 10000, limit_period: 'day', allowed_services: ['noop'], max_call_usd: 1 }),
      });
      policyKeys.push(((await k.json()) as { key: string }).key);
    }
    const byPolicyKey = byKeyOf(policyKeys);
    await load(pools[0]!, '/v1/call', byPolicyKey, callBody, 8, 1500);
    const turns = { none: [] as number[], policy: [] as number[] };
    // CPU per call of each kind of process, per side: where a policy's cost goes.
    const cpu = { none: new Map<string, number>(), policy: new Map<string, number>() };
    const calls = { none: 0, policy: 0 };
    // Write transactions of the cluster (the next transaction id, read without taking one): per call, how well
    // holds and posts batch on each side.
    const xidNow = async () => (admin ? Number((await admin.query('SELECT pg_snapshot_xmax(pg_current_snapshot())::text::int8 AS x')).rows[0].x) : 0);
    const xacts = { none: 0, policy: 0 };
    for (let turn = 0; turn < PAIRED_ROUNDS * 4; turn++) {
      const withPolicy = [0, 1, 1, 0][turn % 4] === 1;
      const before = await cpuNow();
      const xid0 = await xidNow();
      const r = await load(pools[0]!, '/v1/call', withPolicy ? byPolicyKey : byKey, callBody, CONCURRENCY, PAIRED_TURN_MS);
      addInto(cpu[withPolicy ? 'policy' : 'none'], cpuDelta(before, await cpuNow()));
      xacts[withPolicy ? 'policy' : 'none'] += (await xidNow()) - xid0;
      calls[withPolicy ? 'policy' : 'none'] += r.n;
      if (r.errors > 0) console.log(`  turn ${turn}: ${r.errors} errors`);
      (withPolicy ? turns.policy : turns.none).push(r.rps);
    }
    // Each turn with a policy against the turn beside it without one (ABBA: turns 2k and 2k+1 hold one of
    // each), as BENCH_COMPARE_MAIN pairs two builds: the machine's drift from second to second cancels.
    const { ratio, text } = pairedSummary(Array.from({ length: turns.none.length }, (_, i) => turns.policy[i]! / turns.none[i]!));
    const ofMedians = medianOf(turns.policy) / medianOf(turns.none);
    console.log(
      `keys without policy ${medianOf(turns.none).toFixed(0)} calls/s median of ${turns.none.length} turns of ${PAIRED_TURN_MS} ms (${spreadOf(turns.none)})`,
    );
    console.log(
      `keys with policy    ${medianOf(turns.policy).toFixed(0)} calls/s median of ${turns.policy.length} turns of ${PAIRED_TURN_MS} ms (${spreadOf(turns.policy)})`,
    );
    console.log(`  policy/none         ${text}; target >= 0.95: ${ratio >= 0.95 ? 'met' : 'not met'} (ratio of the medians ${ofMedians.toFixed(3)})`);
    console.log(`  CPU ms per call without policy: ${cpuPerCall(cpu.none, calls.none)}`);
    console.log(`  CPU ms per call with policy:    ${cpuPerCall(cpu.policy, calls.policy)}`);
    if (admin)
      console.log(
        `  PostgreSQL write transactions per call: without policy ${(xacts.none / calls.none).toFixed(3)}, with policy ${(xacts.policy / calls.policy).toFixed(3)}`,
      );
    await pools[0]!.close();
    await cleanUp();
    process.exit(0);
  }

  if (compareMain) {
    // Its own schema on PostgreSQL, its own data directory on PGlite: its own accounts and keys.
    const otherUrl = await startInstance('info', compareMain, otherSchema);
    const otherKeys = await signUpKeys(otherUrl);
    await waitCatalog(otherUrl, otherKeys[0]);
    const other = new Pool(otherUrl, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
    await load(other, '/v1/call', byKeyOf(otherKeys), callBody, 8, 1500);
    const builds = [
      { name: 'this build', pool: pools[0]!, pid: gatewayPids[0]!, byKey, runs: [] as Array<Awaited<ReturnType<typeof load>>>, cpu: 0 },
      {
        name: `other (${compareMain})`,
        pool: other,
        pid: gatewayPids.at(-1)!,
        byKey: byKeyOf(otherKeys),
        runs: [] as Array<Awaited<ReturnType<typeof load>>>,
        cpu: 0,
      },
    ];
    const cpuOf = (pid: number) => cpuByProcess([pid], undefined).get('gateway') ?? NaN;
    for (let turn = 0; turn < PAIRED_ROUNDS * 4; turn++) {
      const b = builds[[0, 1, 1, 0][turn % 4]!]!;
      const before = cpuOf(b.pid);
      b.runs.push(await load(b.pool, '/v1/call', b.byKey, callBody, CONCURRENCY, PAIRED_TURN_MS));
      b.cpu += cpuOf(b.pid) - before;
    }
    for (const b of builds) {
      const calls = b.runs.reduce((a, r) => a + r.n, 0);
      const stolen = Math.max(...b.runs.map((r) => r.steal * 100));
      console.log(
        `${b.name.padEnd(12)} ${medianOf(b.runs.map((r) => r.rps)).toFixed(0)} calls/s median of ${b.runs.length} turns of ${PAIRED_TURN_MS} ms (${spreadOf(b.runs.map((r) => r.rps))}); p50 ${medianOf(b.runs.map((r) => r.p50)).toFixed(2)} ms; gateway CPU ${((b.cpu * 1000) / calls).toFixed(3)} ms per call; stolen at most ${stolen.toFixed(0)}%`,
      );
    }
    console.log(`this/other  ${pairedSummary(builds[0]!.runs.map((r, i) => r.rps / builds[1]!.runs[i]!.rps)).text}`);
    await other.close();
    await pools[0]!.close();
    await cleanUp();
    process.exit(0);
  }
  await load(
    direct,
    '/',
    () => ({}),
    () => '{}',
    8,
    500,
  );
  if (ceiling) await load(ceiling, '/', byAccount, () => '{}', 8, 1000);

  // Sequential latency, one caller: a gateway call, a direct service request,
  // a bare debit, then a call with an Idempotency-Key, in turn, so all see the
  // same moment of this shared machine (measured apart, one of them may fall
  // in a busy second).
  let keyed = 0;
  const seq = await sequential(
    [
      { pool: pools[0]!, path: '/v1/call', headers: byKey(0), body: callBody(), steps: true },
      { pool: direct, path: '/', headers: {}, body: '{}' },
      ...(ceiling ? [{ pool: ceiling, path: '/', headers: byAccount(0), body: '{}' }] : []),
      { pool: pools[0]!, path: '/v1/call', headers: () => ({ ...byKey(1), 'idempotency-key': `bench-${process.pid}-${keyed++}` }), body: callBody() },
    ],
    4000,
  );
  const [seqGw, seqDirect] = seq as [Seq, Seq];
  const seqCeiling = ceiling ? seq[2] : undefined;
  const seqKeyed = seq[seq.length - 1]!;
  // Throughput on these shared cores moves by a quarter from one run to the
  // next: three runs of each, the gateway and the ceiling taking turns, and
  // the median is the figure.
  type Run = Awaited<ReturnType<typeof load>>;
  const runs: Run[] = [];
  const ceilingRuns: Run[] = [];
  const cpuGw = new Map<string, number>();
  const cpuCeiling = new Map<string, number>();
  const loadSteps = new Map<string, number[]>();
  // Where each server's main thread was during its runs: on a core, runnable but waiting for one, or idle.
  const gatewayThread = { run: 0, wait: 0, wall: 0, known: true };
  const ceilingThread = { run: 0, wait: 0, wall: 0, known: true };
  const timed = async <T>(pid: number | undefined, into: typeof gatewayThread, work: () => Promise<T>): Promise<T> => {
    const before = pid === undefined ? undefined : schedOf(pid);
    const t0 = performance.now();
    const out = await work();
    const after = pid === undefined ? undefined : schedOf(pid);
    if (before && after) {
      into.run += after.run - before.run;
      into.wait += after.wait - before.wait;
      into.wall += (performance.now() - t0) / 1000;
    } else into.known = false;
    return out;
  };
  for (let r = 0; r < ROUNDS; r++) {
    let before = await cpuNow();
    runs.push(await timed(gatewayPids[0], gatewayThread, () => load(pools[0]!, '/v1/call', byKey, callBody, CONCURRENCY, DURATION_MS, loadSteps)));
    addInto(cpuGw, cpuDelta(before, await cpuNow()));
    if (!ceiling) continue;
    before = await cpuNow();
    ceilingRuns.push(await timed(ceilingPid, ceilingThread, () => load(ceiling, '/', byAccount, () => '{}', CONCURRENCY, DURATION_MS)));
    addInto(cpuCeiling, cpuDelta(before, await cpuNow()));
  }
  const median = (xs: Run[]) => [...xs].sort((a, b) => a.rps - b.rps)[Math.floor(xs.length / 2)]!;
  const gwCalls = runs.reduce((a, r) => a + r.n, 0);
  const cpuOne = cpuPerCall(cpuGw, gwCalls);
  const gatewayCpuMs = ((cpuGw.get('gateway') ?? NaN) * 1000) / gwCalls;
  const one = median(runs);
  const top = ceilingRuns.length ? median(ceilingRuns) : undefined;
  const hot = await load(pools[0]!, '/v1/call', () => ({ authorization: `Bearer ${keys[0]}` }), callBody, CONCURRENCY, Math.round(DURATION_MS / 2));
  const spreadAgain = await load(pools[0]!, '/v1/call', byKey, callBody, CONCURRENCY, Math.round(DURATION_MS / 2));
  const directLoad = await load(
    direct,
    '/',
    () => ({}),
    () => '{}',
    CONCURRENCY,
    DURATION_MS,
  );

  // The same load on a gateway logging warnings only: what the access and call log cost.
  const quietUrl = await startInstance('warn');
  await waitCatalog(quietUrl);
  const quietPool = new Pool(quietUrl, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  await load(quietPool, '/v1/call', byKey, callBody, 8, 1500);
  const quietRuns: Run[] = [];
  for (let r = 0; r < ROUNDS; r++) quietRuns.push(await load(quietPool, '/v1/call', byKey, callBody, CONCURRENCY, DURATION_MS));
  const quiet = median(quietRuns);
  await quietPool.close();

  const second = await startInstance();
  await waitCatalog(second);
  pools.push(new Pool(second, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 }));
  await load(pools[1]!, '/v1/call', byKey, callBody, 8, 1500);
  const two = await load(spread(pools), '/v1/call', byKey, callBody, CONCURRENCY, DURATION_MS);

  const f = (x: number) => x.toFixed(2);
  const busyAndStolen = (r: { busy: number; steal: number }) =>
    `${(r.busy * 100).toFixed(0)}%${r.steal >= 0.005 ? ` (stolen ${(r.steal * 100).toFixed(0)}%)` : ''}`;
  const added = seqGw.p50 - seqDirect.p50;
  console.log(
    `database: ${dbUrl ? 'PostgreSQL' : 'PGlite (PostgreSQL not reachable)'}; rate limits: ${redisUp ? 'Redis' : 'memory'}; concurrency ${CONCURRENCY}; ${ACCOUNTS} accounts; ${DURATION_MS} ms per run; gateway ${main} NODE_ENV=production`,
  );
  console.log(
    `sequential latency  gateway p50 ${f(seqGw.p50)} ms p99 ${f(seqGw.p99)} ms | direct p50 ${f(seqDirect.p50)} ms p99 ${f(seqDirect.p99)} ms | added p50 ${f(added)} ms`,
  );
  console.log(`  with a key          p50 ${f(seqKeyed.p50)} ms p99 ${f(seqKeyed.p99)} ms (Idempotency-Key: the claim and the stored answer too)`);
  console.log(`  steps p50           ${seqGw.stepP50.map(([k, v]) => `${k} ${f(v)}`).join(', ')} ms; the rest is authentication, rate limit and HTTP`);
  if (seqCeiling) {
    console.log(
      `  bare debit          p50 ${f(seqCeiling.p50)} ms p99 ${f(seqCeiling.p99)} ms; added/bare debit ${(added / seqCeiling.p50).toFixed(2)}x (target added <= 2 ms or <= 3x: ${added <= 2 || added <= 3 * seqCeiling.p50 ? 'met' : 'not met'})`,
    );
  }
  console.log(
    `one gateway         ${one.rps.toFixed(0)} calls/s median of ${ROUNDS} runs (${runs.map((r) => r.rps.toFixed(0)).join(', ')}) (p50 ${f(one.p50)} ms, p99 ${f(one.p99)} ms, ${runs.reduce((a, r) => a + r.errors, 0)} errors)`,
  );
  console.log(
    `  steps p50 (load)    ${stepMedians(loadSteps)
      .map(([k, v]) => `${k} ${f(v)}`)
      .join(', ')} ms; machine busy ${runs.map(busyAndStolen).join(', ')} (ceiling ${ceilingRuns.map(busyAndStolen).join(', ')})`,
  );
  if (top) {
    console.log(
      `ceiling             ${top.rps.toFixed(0)} debits/s median of ${ROUNDS} runs (${ceilingRuns.map((r) => r.rps.toFixed(0)).join(', ')}) (p50 ${f(top.p50)} ms, p99 ${f(top.p99)} ms, ${ceilingRuns.reduce((a, r) => a + r.errors, 0)} errors)`,
    );
    // Three decimals: a ratio of 0.396 is not met, and printed as 0.40 it looked met. Each
    // gateway run is followed by a ceiling run; the ratios of those pairs show the spread.
    const pairs = runs.map((r, i) => r.rps / ceilingRuns[i]!.rps);
    console.log(
      `  gateway/ceiling     ${(one.rps / top.rps).toFixed(3)} (target >= 0.40: ${one.rps / top.rps >= 0.4 ? 'met' : 'not met'}); run by run ${pairs.map((x) => x.toFixed(2)).join(', ')}`,
    );
    console.log(
      `  ceiling CPU ms/req  ${cpuPerCall(
        cpuCeiling,
        ceilingRuns.reduce((a, r) => a + r.n, 0),
      )}`,
    );
  }
  console.log(`  CPU ms per call     ${cpuOne} (target gateway <= 0.45: ${gatewayCpuMs <= 0.45 ? 'met' : 'not met'})`);
  const where = (t: typeof gatewayThread) => {
    const share = (x: number) => `${((x / t.wall) * 100).toFixed(0)}%`;
    return `on a core ${share(t.run)}, waiting for one ${share(t.wait)}, idle ${share(Math.max(0, t.wall - t.run - t.wait))}`;
  };
  if (gatewayThread.known && gatewayThread.wall > 0) {
    console.log(
      `  main thread         gateway ${where(gatewayThread)}${ceilingThread.known && ceilingThread.wall > 0 ? `; debit server ${where(ceilingThread)}` : ''}`,
    );
  }
  console.log(
    `logging             info ${one.rps.toFixed(0)} calls/s vs warn only ${quiet.rps.toFixed(0)} calls/s (${quietRuns.map((r) => r.rps.toFixed(0)).join(', ')}): ratio info/warn ${(one.rps / quiet.rps).toFixed(2)} (target >= 0.90)`,
  );
  console.log(
    `two gateways        ${two.rps.toFixed(0)} calls/s (p50 ${f(two.p50)} ms, p99 ${f(two.p99)} ms, ${two.errors} errors), ratio two/one ${(two.rps / one.rps).toFixed(2)}`,
  );
  console.log(
    `hot account         ${hot.rps.toFixed(0)} calls/s on one account (p50 ${f(hot.p50)} ms, p99 ${f(hot.p99)} ms, ${hot.errors} errors) vs ${spreadAgain.rps.toFixed(0)} spread just after: ratio hot/spread ${(hot.rps / spreadAgain.rps).toFixed(2)} (target >= 0.90)`,
  );
  console.log(
    `direct              ${directLoad.rps.toFixed(0)} req/s (p50 ${f(directLoad.p50)} ms, p99 ${f(directLoad.p99)} ms); ratio gateway/direct ${(one.rps / directLoad.rps).toFixed(3)}`,
  );
  console.log(
    `note: gateways, devnet, PostgreSQL, the debit server, the no-op service and this load generator share ${(await import('node:os')).availableParallelism()} cores; load average ${(
      await import('node:os')
    )
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  for (const p of pools) await p.close();
  await direct.close();
  await ceiling?.close();
  await admin?.end();
} finally {
  await cleanUp();
}
