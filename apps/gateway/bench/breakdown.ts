// Where one sequential call's time goes: each piece of the call path timed
// alone, one at a time, on this machine (p50 and p90 of many runs).
//   pnpm bench breakdown      (PostgreSQL at DATABASE_URL, Redis at REDIS_URL)
// The pieces: an event-loop turn, a pool checkout, a prepared statement's
// round trip, a durable and an asynchronous commit (the ledger's own hold
// and post are in the gateway bench's trace), a Redis round trip, the
// certificate, JSON, the request to the service over a kept-alive
// connection, and for the same answer: node:http alone, @farebox/gateway-http's
// adapter and body reader (every route of the gateway answers through them),
// and express's layers (what every route but the call answered through before
// issue 47).
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import express from 'express';
import pg from 'pg';
import { Pool, request } from 'undici';
import { createCertificateSigner, signCallCertificate } from '@farebox/protocol';
import { Keypair } from '@stellar/stellar-sdk';
import { readJsonBody, toNodeListener } from '@farebox/gateway-http';

const N = Number(process.env.BENCH_N ?? 400);
const dbUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const rows: Array<[string, number, number]> = [];

async function time(name: string, fn: () => Promise<unknown>, n = N) {
  for (let i = 0; i < Math.min(50, n); i++) await fn();
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    xs.push(performance.now() - t0);
  }
  xs.sort((a, b) => a - b);
  rows.push([name, xs[Math.floor(n / 2)]!, xs[Math.floor(n * 0.9)]!]);
}

const listen = async (server: Server) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

// ---- event loop
await time('event-loop turn (setImmediate)', () => new Promise((r) => setImmediate(r)));

// ---- PostgreSQL
const schema = `bench_breakdown_${process.pid}`;
const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
await pool.query(`CREATE SCHEMA ${schema}`);
await pool.query(`CREATE TABLE ${schema}.t (id int PRIMARY KEY, bal bigint)`);
await pool.query(`INSERT INTO ${schema}.t VALUES (1, 1000000000)`);
await time('pool checkout + release', async () => (await pool.connect()).release());
await time('prepared SELECT 1 round trip', () => pool.query({ name: 'one', text: 'SELECT 1' }));
await time('durable UPDATE (commit waits for fsync)', () =>
  pool.query({ name: 'debit', text: `UPDATE ${schema}.t SET bal = bal - 1 WHERE id = $1 RETURNING bal`, values: [1] }),
);
await time('UPDATE, asynchronous commit', () =>
  pool.query({
    name: 'debit_async',
    text: `UPDATE ${schema}.t SET bal = bal - 1 WHERE id = $1 AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off' RETURNING bal`,
    values: [1],
  }),
);
// The ledger's own statements are timed by the gateway bench's trace (hold_credits, post_payment).

// ---- Redis: one round trip (what a rate-limit check per call cost)
const redisPort = Number(new URL(redisUrl).port || 6379);
const sock = connect(redisPort, new URL(redisUrl).hostname);
await new Promise((r) => sock.once('connect', r));
let waiting: (() => void) | undefined;
sock.on('data', () => waiting?.());
await time(
  'Redis round trip (PING)',
  () =>
    new Promise<void>((r) => {
      waiting = r;
      sock.write('PING\r\n');
    }),
);
sock.destroy();

// ---- certificate and JSON
const signer = await createCertificateSigner(Keypair.random().secret());
const body = Buffer.from(JSON.stringify({ text: 'hello', to: 'de' }));
await time('certificate: sha256 + Ed25519 sign + encode', () => signCallCertificate({ service: 'noop', body, amount: 1_000_000n, callId: 'call_x' }, signer));
const answer = JSON.stringify({
  result: { ok: true },
  cost: { base_units: 1, usd: '0.0000001' },
  callId: 'call_x',
  trace: { steps: [{ name: 'hold_credits', status: 'ok', startedAt: new Date().toISOString(), durationMs: 1 }] },
});
await time('JSON parse + stringify of an answer', async () => JSON.stringify(JSON.parse(answer)));

// ---- the service connection
const noop = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json', 'content-length': 11 }).end('{"ok":true}'));
});
const noopUrl = await listen(noop);
const agent = new Pool(noopUrl, { connections: 4 });
await time('request to the service, kept-alive connection', async () => {
  const r = await request(noopUrl, { dispatcher: agent, method: 'POST', body, headers: { 'content-type': 'application/json' } });
  await r.body.text();
});

// ---- express layers against node:http for the same answer
const plain = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end('{"ok":true}'));
});
const app = express();
for (let i = 0; i < 20; i++) app.get(`/other${i}`, (_req, res) => res.json({}));
const v1 = express.Router();
v1.use((_req, _res, next) => next());
v1.use(express.json({ limit: '1mb' }), express.urlencoded({ extended: false }));
v1.post('/call', (_req, res) => {
  res.status(200).type('application/json').send('{"ok":true}');
});
app.use('/v1', v1);
// The gateway's own adapter: the request as a record, its JSON body read by the gateway's reader, the answer written back.
const adapted = createServer(
  toNodeListener(async (req) => {
    await readJsonBody(req, { limit: 1024 * 1024 });
    return { status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"ok":true}' };
  }),
);
const plainUrl = await listen(plain);
const appUrl = await listen(createServer(app));
const adaptedUrl = await listen(adapted);
const client = (url: string) => new Pool(url, { connections: 2 });
const [pc, ac, hc] = [client(plainUrl), client(appUrl), client(adaptedUrl)];
const post = async (c: Pool) =>
  (await c.request({ method: 'POST', path: '/v1/call', headers: { 'content-type': 'application/json' }, body: '{"service":"noop","payload":{}}' })).body.text();
await time('HTTP answer, node:http', () => post(pc));
await time('HTTP answer, gateway-http adapter + JSON reader', () => post(hc));
await time('HTTP answer, express (json + urlencoded, router)', () => post(ac));

console.log(
  `sequential p50 / p90 in ms, ${N} runs each, one at a time; load average ${(await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
for (const [name, p50, p90] of rows) console.log(`  ${name.padEnd(52)} ${p50.toFixed(3).padStart(7)} ${p90.toFixed(3).padStart(7)}`);

await Promise.all([pc.close(), ac.close(), hc.close(), agent.close()]);
for (const s of [noop, plain, adapted]) s.close();
await pool.query(`DROP SCHEMA ${schema} CASCADE`);
await pool.end();
process.exit(0);
