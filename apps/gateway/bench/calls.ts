// Gateway call throughput and added latency, against a no-op service.
//   pnpm bench gateway            (PostgreSQL at DATABASE_URL when reachable, else PGlite)
// The gateway runs in a child process (its own core); the load generator and
// the no-op service run here. Prints medians, p99, calls/s and ratios.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:http';
import { createServer as netServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Keypair } from '@stellar/stellar-sdk';
import { Pool } from 'undici';
import { createRegistryClient, keypairSigner, resolveNetwork } from '@farebox/stellar';

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ACCOUNTS = 16;

async function freePort() {
  const s = netServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

async function postgresUrl(): Promise<string | undefined> {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    await client.end();
    return url;
  } catch {
    return undefined;
  }
}

function pct(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function load(pool: Pool, path: string, headersFor: (i: number) => Record<string, string>, body: (i: number) => string, concurrency: number, durationMs: number) {
  const lat: number[] = [];
  let errors = 0;
  let n = 0;
  const end = Date.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (Date.now() < end) {
        const i = n++;
        const t0 = performance.now();
        const res = await pool.request({ method: 'POST', path, headers: { 'content-type': 'application/json', ...headersFor(i) }, body: body(i) });
        await res.body.text();
        if (res.statusCode !== 200) errors++;
        lat.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  lat.sort((a, b) => a - b);
  return { rps: lat.length / seconds, p50: pct(lat, 50), p99: pct(lat, 99), errors, n: lat.length };
}

const noop = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11 });
    res.end('{"ok":true}');
  });
});
noop.keepAliveTimeout = 60_000;
await new Promise<void>((r) => noop.listen(0, '127.0.0.1', r));
const servicePort = (noop.address() as AddressInfo).port;

const dbUrl = await postgresUrl();
const port = await freePort();
const dataDir = await mkdtemp(join(tmpdir(), 'farebox-bench-'));
const schema = `bench_${process.pid}`;
const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const child: ChildProcess = spawn(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', main], {
  env: {
    PATH: process.env.PATH,
    PORT: String(port),
    FAREBOX_DATA_DIR: dataDir,
    FAREBOX_AUTH_RATE_LIMIT: '1000',
    FAREBOX_ACCOUNT_RATE_LIMIT: '10000000',
    ...(dbUrl ? { DATABASE_URL: `${dbUrl}${dbUrl.includes('?') ? '&' : '?'}options=-c%20search_path%3D${schema}` } : {}),
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
if (dbUrl) {
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect();
  await c.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  await c.end();
}
const base = await new Promise<string>((resolve, reject) => {
  let out = '';
  child.stdout!.on('data', (d) => {
    out += d;
    const m = /Farebox gateway\s+(\S+)/.exec(out);
    if (m) resolve(m[1]!);
  });
  child.once('exit', (c) => reject(new Error(`gateway exited ${c}`)));
});

try {
  const network = resolveNetwork({ network: 'local', devnetUrl: `${base}/devnet`, env: {} });
  const owner = Keypair.random();
  await fetch(`${base}/devnet/friendbot?addr=${owner.publicKey()}`);
  await createRegistryClient(network).register(keypairSigner(owner.secret()), { service: 'noop', pricePerCall: 1n, endpoint: `http://127.0.0.1:${servicePort}/`, description: 'no-op' });

  const keys: string[] = [];
  for (let i = 0; i < ACCOUNTS; i++) {
    const s = await fetch(`${base}/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: `bench${i}@example.com`, password: 'bench password' }) });
    const cookie = s.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const { csrf_token } = (await s.json()) as { csrf_token: string };
    const k = await fetch(`${base}/v1/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token }, body: JSON.stringify({ name: 'bench' }) });
    keys.push(((await k.json()) as { key: string }).key);
  }
  for (;;) {
    const list = (await (await fetch(`${base}/v1/agents`, { headers: { authorization: `Bearer ${keys[0]}` } })).json()) as Array<{ service: string }>;
    if (list.some((s) => s.service === 'noop')) break;
    await new Promise((r) => setTimeout(r, 100));
  }

  const gw = new Pool(base, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  const direct = new Pool(`http://127.0.0.1:${servicePort}`, { connections: CONCURRENCY, pipelining: 1, keepAliveTimeout: 60_000 });
  const callBody = () => '{"service":"noop","payload":{}}';
  // Warm up both paths.
  await load(gw, '/v1/call', (i) => ({ authorization: `Bearer ${keys[i % ACCOUNTS]}` }), callBody, 8, 1500);
  await load(direct, '/', () => ({}), () => '{}', 8, 500);

  const seqGw = await load(gw, '/v1/call', (i) => ({ authorization: `Bearer ${keys[i % ACCOUNTS]}` }), callBody, 1, 3000);
  const seqDirect = await load(direct, '/', () => ({}), () => '{}', 1, 3000);
  const gwLoad = await load(gw, '/v1/call', (i) => ({ authorization: `Bearer ${keys[i % ACCOUNTS]}` }), callBody, CONCURRENCY, DURATION_MS);
  const hot = await load(gw, '/v1/call', () => ({ authorization: `Bearer ${keys[0]}` }), callBody, CONCURRENCY, Math.round(DURATION_MS / 2));
  const directLoad = await load(direct, '/', () => ({}), () => '{}', CONCURRENCY, DURATION_MS);

  const f = (x: number) => x.toFixed(2);
  console.log(`database: ${dbUrl ? 'PostgreSQL' : 'PGlite (PostgreSQL not reachable)'}; concurrency ${CONCURRENCY}; ${ACCOUNTS} accounts`);
  console.log(`sequential latency  gateway p50 ${f(seqGw.p50)} ms p99 ${f(seqGw.p99)} ms | direct p50 ${f(seqDirect.p50)} ms p99 ${f(seqDirect.p99)} ms | added p50 ${f(seqGw.p50 - seqDirect.p50)} ms (target <= 5)`);
  console.log(`throughput          gateway ${gwLoad.rps.toFixed(0)} calls/s (p50 ${f(gwLoad.p50)} ms, p99 ${f(gwLoad.p99)} ms, ${gwLoad.errors} errors) (target >= 800)`);
  console.log(`hot account         gateway ${hot.rps.toFixed(0)} calls/s on one account (p50 ${f(hot.p50)} ms, p99 ${f(hot.p99)} ms, ${hot.errors} errors)`);
  console.log(`direct              ${directLoad.rps.toFixed(0)} req/s (p50 ${f(directLoad.p50)} ms, p99 ${f(directLoad.p99)} ms)`);
  console.log(`ratio gateway/direct throughput ${(gwLoad.rps / directLoad.rps).toFixed(3)}`);
  await gw.close();
  await direct.close();
} finally {
  child.kill('SIGTERM');
  noop.close();
  if (dbUrl) {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await c.end();
  }
}
