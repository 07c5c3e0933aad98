/**
 * `pnpm bench discovery`: the discovery backend over HTTP at 100,000 services.
 *
 * 1. Builds a snapshot of N synthetic services (words drawn from a 5,000-word
 *    vocabulary with a skewed frequency, 384-dim random vectors, the HNSW graph)
 *    in a fresh data directory, the way a running instance writes one.
 * 2. Starts `farebox-discovery` as its own process on a devnet (ledger close
 *    every second) and times restart-to-ready: spawn until `/health` answers 200.
 * 3. Search over HTTP (keep-alive, one request at a time): p50/p95 of 1-3 word
 *    queries, hybrid, including HTTP and JSON. No multilingual-e5 here: a tiny
 *    stand-in model with the same id embeds the queries (a lookup, well under
 *    a millisecond), so the figures exclude real query embedding.
 * 4. Registration-to-searchable on the devnet: registrations through the
 *    registry contract, each timed from submission and from the close of the
 *    ledger that holds it until `/search` finds it.
 * 5. Stops the process (SIGTERM writes the final snapshot) and times a second
 *    restart-to-ready.
 *
 * BENCH_DISCOVERY_SERVICES (default 100000), BENCH_DISCOVERY_QUERIES (1000),
 * BENCH_DISCOVERY_REGISTRATIONS (10), BENCH_DISCOVERY_CORPUS_DIR (keep the
 * built corpus there and reuse it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSearchIndex, type Embedder } from '@farebox/discovery';
import { startDevnet } from '@farebox/devnet';
import { encodeStrKey, randomBytes } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner, type RegistryAgent } from '@farebox/stellar';
import { StateDir } from '../src/state.js';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';

const N = Number(process.env.BENCH_DISCOVERY_SERVICES ?? 100_000);
const QUERIES = Number(process.env.BENCH_DISCOVERY_QUERIES ?? 1_000);
const REGISTRATIONS = Number(process.env.BENCH_DISCOVERY_REGISTRATIONS ?? 10);
const CLOSE_MS = 1_000;
const DIMS = 384;
const MODEL_ID = 'Xenova/multilingual-e5-small';
const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..', '..');

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
const ms = (n: number) => `${n.toFixed(1)} ms`;
function rng(seed: number) {
  let s = seed >>> 0;
  return () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
}
const rand = rng(7);
const syllables = ['ka', 'lo', 'mi', 'ren', 'tas', 'vu', 'po', 'zen', 'dra', 'fi', 'gor', 'hul', 'ix', 'jem', 'nor', 'qua', 'sel', 'tor', 'ul', 'wex'];
const vocab = [
  ...new Set(
    Array.from({ length: 6_000 }, () => Array.from({ length: 2 + Math.floor(rand() * 2) }, () => syllables[Math.floor(rand() * syllables.length)]).join('')),
  ),
].slice(0, 5_000);
/** Skewed: low ranks are common words, high ranks rare ones. */
const word = () => vocab[Math.floor(vocab.length * rand() ** 2)]!;

/** Stands in for e5 while the corpus is built: same id and size, never loads (no passage is embedded). */
const corpusEmbedder: Embedder = {
  modelId: MODEL_ID,
  dims: DIMS,
  load: async () => ({ state: 'failed', modelId: MODEL_ID, dims: DIMS, reason: 'bench corpus: vectors are set directly' }),
  status: () => ({ state: 'failed', modelId: MODEL_ID, dims: DIMS }),
  embed: async () => {
    throw new Error('not used');
  },
};

async function buildSnapshot(dataDir: string, contractId: string): Promise<void> {
  const t0 = performance.now();
  const flat = createSearchIndex({ embedder: corpusEmbedder });
  for (let i = 0; i < N; i++) {
    const service = `${word()}-${i}`;
    const agent: RegistryAgent = {
      owner: 'GBENCH',
      service,
      pricePerCall: 10_000n,
      endpoint: `https://svc-${i}.example/`,
      description: Array.from({ length: 12 + Math.floor(rand() * 20) }, word).join(' '),
      totalCalls: 0n,
      totalEarned: 0n,
      createdAt: 1_700_000_000 + i,
    };
    void flat.upsert({ id: service, name: service, description: agent.description, meta: agent });
    const v = new Float32Array(DIMS);
    for (let d = 0; d < DIMS; d++) v[d] = rand() - 0.5;
    flat.setVector(service, v);
  }
  const bytes = flat.snapshot();
  const t1 = performance.now();
  const hnsw = createSearchIndex({ embedder: corpusEmbedder, vectorIndex: 'hnsw' });
  await hnsw.load(bytes);
  await hnsw.idle();
  const status = hnsw.status();
  const t2 = performance.now();
  const state = await new StateDir(join(dataDir, 'local'), 'local', contractId).write(
    { take: (graphPath) => hnsw.snapshotWithGraph({ graphPath }) },
    undefined,
    null,
  );
  console.log(
    `  corpus: ${N.toLocaleString('en')} services indexed in ${((t1 - t0) / 1000).toFixed(1)} s, HNSW graph built in ${((t2 - t1) / 1000).toFixed(1)} s (${status.vectorIndex}${status.vectorIndexReason ? `: ${status.vectorIndexReason}` : ''}), snapshot written in ${((performance.now() - t2) / 1000).toFixed(1)} s (graph ${state.graph ? 'saved' : 'not saved'})`,
  );
}

let launcher: string | undefined;

interface Running {
  child: ChildProcess;
  url: string;
  readyMs: number;
}

async function startProcess(env: Record<string, string>): Promise<Running> {
  const dist = join(root, 'apps', 'discovery', 'dist', 'main.js');
  const args = existsSync(dist) ? [dist] : ['--conditions=@farebox/source', '--import', 'tsx', join(root, 'apps', 'discovery', 'src', 'main.ts')];
  launcher ??= existsSync(dist) ? 'apps/discovery/dist/main.js' : 'apps/discovery/src/main.ts through tsx (run pnpm build for the built entry)';
  const t0 = performance.now();
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((ok, fail) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Farebox discovery (http:\/\/\S+)/.exec(out);
      if (m) ok(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`farebox-discovery exited with ${code}: ${out}`)));
  });
  for (;;) {
    const res = await fetch(`${url}/health`).catch(() => undefined);
    if (res?.status === 200) {
      await res.body?.cancel();
      break;
    }
    await res?.body?.cancel();
    await new Promise((r) => setTimeout(r, 10));
  }
  return { child, url, readyMs: performance.now() - t0 };
}

async function stop(p: Running): Promise<number> {
  const t0 = performance.now();
  p.child.kill('SIGTERM');
  await new Promise((r) => p.child.once('exit', r));
  return performance.now() - t0;
}

async function main() {
  console.log(`Discovery backend over HTTP: ${N.toLocaleString('en')} services, devnet ledger close every ${CLOSE_MS} ms`);
  const work = await mkdtemp(join(tmpdir(), 'farebox-bench-discovery-'));
  const devnet = await startDevnet({ port: 0, closeIntervalMs: CLOSE_MS });
  const contractId = devnet.network.registryContractId!;
  try {
    await writeTinyModel(join(work, 'models'), MODEL_ID, 'model_quantized.onnx');
    const dataDir = join(work, 'data');
    // BENCH_DISCOVERY_CORPUS_DIR keeps the built corpus (the graph build takes minutes) for the next run.
    const cache = process.env.BENCH_DISCOVERY_CORPUS_DIR ? join(process.env.BENCH_DISCOVERY_CORPUS_DIR, `n${N}`) : undefined;
    if (cache && existsSync(join(cache, 'local', 'state-local.json'))) {
      await cp(cache, dataDir, { recursive: true });
      console.log(`  corpus: ${N.toLocaleString('en')} services from ${cache}`);
    } else {
      await buildSnapshot(dataDir, contractId);
      if (cache) await cp(dataDir, cache, { recursive: true });
    }
    const env = {
      STELLAR_NETWORK: 'local',
      FAREBOX_DEVNET_URL: devnet.url,
      FAREBOX_DISCOVERY_DATA_DIR: dataDir,
      FAREBOX_DISCOVERY_HOST: '127.0.0.1',
      PORT: '0',
      FAREBOX_MODEL_DIR: join(work, 'models'),
      FAREBOX_DISCOVERY_RATE_LIMIT: '0',
      FAREBOX_DISCOVERY_SNAPSHOT_MS: '0',
    };

    let p = await startProcess(env);
    let health = (await (await fetch(`${p.url}/health`)).json()) as Record<string, unknown>;
    console.log(
      `  process: ${launcher}; ${JSON.stringify(health.startup_ms)} inside it (load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} on ${cpus().length} cores)`,
    );
    console.log(
      `  start from the snapshot to ready: ${ms(p.readyMs)} (target < 5000 ms; ${String(health.documents)} services, ${String(health.vectors)} vectors, ${String(health.mode)}, graph ${(health.restored_from as { graph_loaded?: boolean } | null)?.graph_loaded ? 'read from the snapshot' : 'rebuilt'})`,
    );

    // Search over HTTP.
    const queries = Array.from({ length: QUERIES + 50 }, () => Array.from({ length: 1 + Math.floor(rand() * 3) }, word).join(' '));
    const times: number[] = [];
    let hits = 0;
    let mode = '';
    for (const [i, q] of queries.entries()) {
      const t0 = performance.now();
      const res = await fetch(`${p.url}/search?q=${encodeURIComponent(q)}&limit=10`);
      const body = (await res.json()) as { results: unknown[]; mode: string };
      const t = performance.now() - t0;
      if (res.status !== 200) throw new Error(`search answered ${res.status}`);
      if (i >= 50) {
        times.push(t);
        hits += body.results.length;
        mode = body.mode;
      }
    }
    times.sort((a, b) => a - b);
    console.log(
      `  search over HTTP (${QUERIES} queries, limit 10, ${(hits / QUERIES).toFixed(1)} hits each, mode ${mode}): p50 ${ms(pct(times, 50))}, p95 ${ms(pct(times, 95))}, p99 ${ms(pct(times, 99))} (target p95 <= 25 ms)`,
    );

    // Registration to searchable.
    const registry = createRegistryClient(devnet.network);
    const accounts = createAccounts(devnet.network);
    const owner = keypairSigner(encodeStrKey('secretSeed', randomBytes(32)));
    await accounts.fund(owner.publicKey);
    const fromSubmit: number[] = [];
    const fromClose: number[] = [];
    // When each transaction's ledger closed (the devnet runs in this process).
    const closedAt = new Map<string, number>();
    const previous = devnet.chain.onClose;
    devnet.chain.onClose = (ledger, txs) => {
      previous?.(ledger, txs);
      const now = performance.now();
      for (const tx of txs) closedAt.set(tx.hash, now);
    };
    for (let i = 0; i < REGISTRATIONS; i++) {
      const token = `benchreg${i}${Math.random().toString(36).slice(2, 8)}`;
      // Submit at a random point of the ledger period, as real registrations arrive.
      await new Promise((r) => setTimeout(r, rand() * CLOSE_MS));
      const t0 = performance.now();
      const { txHash } = await registry.register(owner, {
        service: `reg-${i}-${token.slice(-6)}`,
        pricePerCall: 10_000n,
        endpoint: `https://reg-${i}.example/`,
        description: `benchmark registration ${token}`,
      });
      const t1 = closedAt.get(txHash);
      if (t1 === undefined) throw new Error(`no ledger close seen for ${txHash}`);
      for (;;) {
        const body = (await (await fetch(`${p.url}/search?q=${token}&limit=1`)).json()) as { results: unknown[] };
        if (body.results.length > 0) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      const t2 = performance.now();
      fromSubmit.push(t2 - t0);
      fromClose.push(t2 - t1);
    }
    fromSubmit.sort((a, b) => a - b);
    fromClose.sort((a, b) => a - b);
    console.log(
      `  registration to searchable (${REGISTRATIONS} registrations): from submission p50 ${ms(pct(fromSubmit, 50))}, max ${ms(fromSubmit.at(-1)!)} (target one ledger close + 200 ms = ${CLOSE_MS + 200} ms); after its ledger closed p50 ${ms(pct(fromClose, 50))}, max ${ms(fromClose.at(-1)!)} (target 200 ms)`,
    );

    const stopMs = await stop(p);
    p = await startProcess(env);
    health = (await (await fetch(`${p.url}/health`)).json()) as Record<string, unknown>;
    console.log(
      `  restart after SIGTERM (final snapshot written in ${ms(stopMs)}): ready in ${ms(p.readyMs)} (target < 5000 ms; ${String(health.documents)} services, ${String(health.vectors)} vectors, graph ${(health.restored_from as { graph_loaded?: boolean } | null)?.graph_loaded ? 'read from the snapshot' : 'rebuilt'}; ${JSON.stringify(health.startup_ms)} inside the process; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')})`,
    );
    await stop(p);
  } finally {
    await devnet.close();
    await rm(work, { recursive: true, force: true });
  }
}

await main();
