// Verification overhead of @farebox/provider through its express adapter.
//
//   pnpm exec tsx packages/provider/bench/verify.ts
//
// A child process runs two express apps with the same no-op handler: one
// behind provider.express() receiving platform-signed calls (each with a fresh
// certificate), one answering the same JSON without any verification. This
// process drives both over keep-alive undici connections: first sequential
// requests, alternating between the apps (latency median and p99), then a
// fixed time at concurrency 8 each (requests/s). Target: verification adds at
// most 0.3 ms at the median.
import { spawnSync, fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CONDITION = '--conditions=@farebox/source';
const self = fileURLToPath(import.meta.url);

if (!process.execArgv.includes(CONDITION)) {
  // Resolve workspace packages to their TypeScript sources, as the tests do.
  const r = spawnSync(process.execPath, [...process.execArgv, CONDITION, self, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
} else if (process.argv[2] === '--server') {
  await runServer();
} else {
  await runBench();
}

async function runServer(): Promise<void> {
  const { default: express } = await import('express');
  const { createProvider } = await import('@farebox/provider');
  const { encodeStrKey, randomBytes } = await import('@farebox/protocol');
  const { startDevnet } = await import('@farebox/devnet');
  const noop = () => ({ ok: true });
  // The registry check runs against an in-process devnet, as in production against the chain.
  const devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  const provider = createProvider({
    service: 'bench',
    pricePerCall: '0.001',
    network: 'local',
    endpoint: 'http://127.0.0.1:9/',
    wallet: { secret: encodeStrKey('secretSeed', randomBytes(32)) },
    platform: { publicKey: process.env.FAREBOX_PLATFORM_PUBLIC_KEY! },
    env: { FAREBOX_DEVNET_URL: devnet.url },
  }).serve(noop);
  await provider.bootstrap();
  const verified = express();
  verified.use(provider.express());
  const plain = express();
  plain.post('/', express.raw({ type: '*/*', limit: '256kb' }), (req, res) => {
    const payload: unknown = JSON.parse((req.body as Buffer).toString('utf8'));
    void payload;
    const text = JSON.stringify(noop());
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.end(text);
  });
  const listen = (app: ReturnType<typeof express>) =>
    new Promise<number>((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port));
    });
  const ports = { verified: await listen(verified), plain: await listen(plain) };
  process.send!(ports);
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function runBench(): Promise<void> {
  const { Pool } = await import('undici');
  const { CERTIFICATE_HEADER, createCertificateSigner, encodeStrKey, randomBytes, signCallCertificate } = await import('@farebox/protocol');

  const signer = await createCertificateSigner(encodeStrKey('secretSeed', randomBytes(32)));
  const child: ChildProcess = fork(self, ['--server'], { env: { ...process.env, FAREBOX_PLATFORM_PUBLIC_KEY: signer.publicKey }, stdio: 'inherit' });
  const ports = await new Promise<{ verified: number; plain: number }>((resolve) => child.once('message', (m) => resolve(m as never)));

  const body = JSON.stringify({ text: 'hello world', n: 42 });
  const LATENCY_N = 3000;
  const WARMUP = 500;
  const THROUGHPUT_MS = 4000;
  const CONCURRENCY = 8;
  // One certificate per signed request: each nonce is served once.
  const certs: string[] = [];
  const makeCerts = async (n: number) => {
    for (let i = 0; i < n; i++) {
      certs.push((await signCallCertificate({ service: 'bench', body, amount: 10_000n, callId: `c${i}` }, signer)).header);
    }
  };
  const t0 = performance.now();
  const CERTS = WARMUP + LATENCY_N + 40_000;
  await makeCerts(CERTS);
  const signMs = performance.now() - t0;

  const verifiedPool = new Pool(`http://127.0.0.1:${ports.verified}`, { connections: CONCURRENCY, pipelining: 1 });
  const plainPool = new Pool(`http://127.0.0.1:${ports.plain}`, { connections: CONCURRENCY, pipelining: 1 });
  const baseHeaders = { 'content-type': 'application/json' };

  async function once(pool: InstanceType<typeof Pool>, signed: boolean): Promise<number> {
    const headers = signed ? { ...baseHeaders, [CERTIFICATE_HEADER]: certs.pop()! } : baseHeaders;
    const start = performance.now();
    const res = await pool.request({ path: '/', method: 'POST', body, headers });
    await res.body.text();
    const ms = performance.now() - start;
    if (res.statusCode !== 200) throw new Error(`unexpected status ${res.statusCode} (${signed ? 'verified' : 'plain'})`);
    return ms;
  }

  for (let i = 0; i < WARMUP; i++) {
    await once(verifiedPool, true);
    await once(plainPool, false);
  }
  const lat = { verified: [] as number[], plain: [] as number[] };
  for (let i = 0; i < LATENCY_N; i++) {
    // Alternate the order so drift and GC fall on both sides alike.
    if (i % 2 === 0) {
      lat.verified.push(await once(verifiedPool, true));
      lat.plain.push(await once(plainPool, false));
    } else {
      lat.plain.push(await once(plainPool, false));
      lat.verified.push(await once(verifiedPool, true));
    }
  }
  lat.verified.sort((a, b) => a - b);
  lat.plain.sort((a, b) => a - b);

  async function throughput(pool: InstanceType<typeof Pool>, signed: boolean): Promise<number> {
    let done = 0;
    const until = performance.now() + THROUGHPUT_MS;
    const start = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (performance.now() < until && (!signed || certs.length > 0)) {
          await once(pool, signed);
          done++;
        }
      }),
    );
    return done / ((performance.now() - start) / 1000);
  }
  const plainRps = await throughput(plainPool, false);
  const verifiedRps = await throughput(verifiedPool, true);

  await verifiedPool.close();
  await plainPool.close();
  child.kill();

  const f = (n: number) => n.toFixed(3);
  const medV = quantile(lat.verified, 0.5);
  const medP = quantile(lat.plain, 0.5);
  const p99V = quantile(lat.verified, 0.99);
  const p99P = quantile(lat.plain, 0.99);
  const overhead = medV - medP;
  console.log(`@farebox/provider verification overhead (express adapter, no-op handler, ${LATENCY_N} sequential requests each, keep-alive)`);
  console.log(`  certificates signed before the run: ${CERTS} in ${signMs.toFixed(0)} ms (client side, not measured below)`);
  console.log(`  verification is dominated by one Ed25519 verify in node:crypto (about 0.15 ms on this kind of machine)`);
  console.log(`  latency ms            median    p99`);
  console.log(`    with verification   ${f(medV)}    ${f(p99V)}`);
  console.log(`    without             ${f(medP)}    ${f(p99P)}`);
  console.log(`    overhead            ${f(overhead)}    ${f(p99V - p99P)}`);
  console.log(`  requests/s at concurrency ${CONCURRENCY} for ${THROUGHPUT_MS / 1000} s`);
  console.log(`    with verification   ${verifiedRps.toFixed(0)}`);
  console.log(`    without             ${plainRps.toFixed(0)}`);
  console.log(`    ratio               ${(verifiedRps / plainRps).toFixed(3)}`);
  console.log(`  target: overhead <= 0.300 ms at the median -> ${overhead <= 0.3 ? 'met' : 'NOT met'}`);
}
