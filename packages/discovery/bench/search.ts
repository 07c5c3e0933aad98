/**
 * Discovery bench: relevance (hit@3, nDCG@10, Recall@5) on bench/relevance/
 * for keyword-only (BM25 alone, as without a model), and vectors alone and
 * hybrid with the test kit's tiny model and (when present) the real one, over
 * all judged queries, the same-language ones (a judged service is in the
 * query's language) and the one/two-word queries with graded judgements; each
 * keyword and hybrid line shows the capped BM25' (before) next to the knee
 * normalisation (now). Then speed at 100k synthetic services
 * (BENCH_SERVICES=0 skips it; BENCH_MISSES=1 lists the same-language misses).
 *
 *   pnpm exec tsx packages/discovery/bench/search.ts
 *   FAREBOX_MODEL_DIR=/path/to/models pnpm exec tsx packages/discovery/bench/search.ts
 *
 * Vector figures need the real model (multilingual-e5-small) in
 * FAREBOX_MODEL_DIR (or the default cache, see docs/search.md); without it the
 * bench says so and prints keyword figures only. At scale it also measures
 * vectorIndex 'hnsw' (when usearch loads) against the exact flat index; its
 * graph build takes over a minute at 100k on 2 cores (BENCH_HNSW=0 skips it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import {
  createEmbedder,
  createSearchIndex,
  rankByHealth,
  type Embedder,
  type FusionWeights,
  type SearchIndex,
  type SearchIndexOptions,
  type ServiceDocument,
} from '../src/index.js';
import { evaluate, type Figures, GROUPS, queries, type Rerank, services } from './relevance.js';

const N = Number(process.env['BENCH_SERVICES'] ?? 100_000);
const DIMS = 384;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const ms = (x: number) => `${x.toFixed(2)} ms`;

/** One block of figures per index, side by side: the capped BM25' (before) and the knee (now). */
function report(label: string, runs: Array<[string, ReturnType<typeof evaluate>]>) {
  const f = (x: Figures) => `hit@3 ${(x.hit3 / x.n).toFixed(3)}  nDCG@10 ${(x.ndcg / x.n).toFixed(3)}  Recall@5 ${(x.recall / x.n).toFixed(3)}`;
  console.log(`  ${label}`);
  for (const [g, name] of GROUPS) {
    const n = runs[0]![1].sums[g].n;
    console.log(`    ${`${name} ${n}`.padEnd(32)} ${runs.map(([tag, r]) => `${tag}: ${f(r.sums[g])}`).join('   |   ')}`);
  }
  console.log(`    ${'nonsense queries with results'.padEnd(32)} ${runs.map(([tag, r]) => `${tag}: ${r.nonsenseHits}/${r.nonsense}`).join('   |   ')}`);
  const last = runs[runs.length - 1]![1];
  if (process.env['BENCH_MISSES'] === '1' && last.misses.length > 0)
    console.log(`    same-language misses (no judged service in the top 3): ${last.misses.join(', ')}`);
}

/** Builds an index over the relevance services with precomputed vectors (or none). */
function buildIndex(docs: ServiceDocument[], vecs: Float32Array[] | null, options: SearchIndexOptions) {
  const index = createSearchIndex({ ...options, dims: DIMS });
  docs.forEach((d, i) => {
    void index.upsert(d);
    if (vecs) index.setVector(d.id, vecs[i]!);
  });
  return index;
}

/** Keyword-only, vectors alone and hybrid figures with one embedder (or none), capped BM25' against the knee. */
async function relevanceWith(title: string, embedder: Embedder | null, docs: ServiceDocument[]) {
  const side = (vecs: Float32Array[] | null, qv: Map<string, Float32Array> | null, weights: FusionWeights) =>
    (['cap', 'knee'] as const).map(
      (norm) =>
        [norm === 'cap' ? "capped BM25' (before)" : "knee BM25' (now)", evaluate(buildIndex(docs, vecs, { weights, bm25Normalization: norm }), qv)] as [
          string,
          ReturnType<typeof evaluate>,
        ],
    );
  if (!embedder) {
    report(`keyword-only (${title})`, side(null, null, { bm25: 0.6, vector: 0.4 }));
    return;
  }
  const t0 = performance.now();
  const vecs = await embedder.embed(
    docs.map((d) => `${d.name}: ${d.description}`),
    'passage',
  );
  const passageMs = (performance.now() - t0) / docs.length;
  const qv = new Map<string, Float32Array>();
  const t1 = performance.now();
  for (const q of queries) qv.set(q.id, (await embedder.embed([q.query], 'query'))[0]!);
  const queryMs = (performance.now() - t1) / queries.length;
  report(`vectors alone (${title})`, [['vectors', evaluate(buildIndex(docs, vecs, { weights: { bm25: 0, vector: 1 } }), qv)]]);
  report(`hybrid 0.6/0.4 (${title})`, side(vecs, qv, { bm25: 0.6, vector: 0.4 }));
  console.log(`  embedding (${title}): ${ms(passageMs)} per passage (batched), ${ms(queryMs)} per query`);
}

async function relevance(): Promise<Embedder | null> {
  console.log(`Relevance: ${services.length} services (${[...new Set(services.map((s) => s.lang))].join(', ')}), ${queries.length} queries`);
  const docs = services.map((s) => ({ id: s.id, name: s.name, description: s.description }));
  // Keyword-only: what a host without a model answers (default weights, no vectors).
  await relevanceWith('no model', null, docs);
  // The test kit's tiny model (a few concept words in five languages): hybrid fusion with a real ONNX model, always available.
  const tinyDir = mkdtempSync(join(tmpdir(), 'farebox-bench-tiny-'));
  try {
    const tinyId = await writeTinyModel(tinyDir);
    const tiny = createEmbedder({ modelDir: tinyDir, modelId: tinyId, dtype: 'fp32', allowRemote: false });
    const st = await tiny.load();
    if (st.state === 'ready') await relevanceWith('tiny test model', tiny, docs);
    else console.log(`  tiny test model: NOT LOADED (${st.reason})`);
  } finally {
    rmSync(tinyDir, { recursive: true, force: true });
  }
  const embedder = createEmbedder();
  const status = await embedder.load();
  if (status.state !== 'ready') {
    console.log(`  real model: NOT AVAILABLE (${status.reason})`);
    console.log('  Figures with multilingual-e5-small need the real model (farebox model fetch, or FAREBOX_MODEL_DIR).');
    return null;
  }
  await relevanceWith(`${status.modelId}, ${embedder.dims} dims`, embedder, docs);
  return embedder;
}

/**
 * Health (docs/search.md, "Health"), keyword-only: an all-healthy catalog ranks exactly as relevance does (the
 * same nDCG); in a mixed one, where every third judged service fails most calls, the failing ones leave the top 3.
 */
function health() {
  console.log("\nHealth: relevance weighed by each service's health (keyword-only index)");
  const docs = services.map((s) => ({ id: s.id, name: s.name, description: s.description }));
  const index = buildIndex(docs, null, { weights: { bm25: 0.6, vector: 0.4 } });
  const ok = { status: 'ok' as const, successRate: 1 };
  const judged = [...new Set(queries.flatMap((q) => q.relevant))].sort();
  const failing = new Set(judged.filter((_, i) => i % 3 === 0));
  const mixed = (id: string) => (failing.has(id) ? { status: 'failing' as const, successRate: 0.2 } : ok);
  const plain = evaluate(index, null);
  const healthy = evaluate(index, null, (hits) => rankByHealth(hits, () => ok));
  const failingInTop3 = (rerank?: Rerank) => {
    let n = 0;
    for (const q of queries) {
      const found = index.searchWithVector(q.query, null, { limit: 10 });
      n += (rerank ? rerank(found) : found).slice(0, 3).filter((h) => failing.has(h.id)).length;
    }
    return n;
  };
  const f = (x: Figures) => `nDCG@10 ${(x.ndcg / x.n).toFixed(4)}`;
  console.log(
    `  all healthy: relevance alone ${f(plain.sums.all)}, with health ${f(healthy.sums.all)} (the same: ${plain.sums.all.ndcg === healthy.sums.all.ndcg})`,
  );
  const before = failingInTop3();
  const after = failingInTop3((hits) => rankByHealth(hits, (h) => mixed(h.id)));
  console.log(
    `  mixed (${failing.size} of ${judged.length} judged services failing, 20 % answered): failing services in the top 3 of all queries: ${before} by relevance alone, ${after} with health`,
  );
}

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function scale(embedder: Embedder | null) {
  console.log(`\nScale: ${N.toLocaleString('en')} synthetic services, ${DIMS}-dim random unit vectors (embedding excluded)`);
  const rand = rng(42);
  const words = [...new Set(services.flatMap((s) => s.description.toLowerCase().split(/[^\p{L}\p{N}]+/u)).filter((w) => w.length > 2))];
  const pick = () => words[Math.floor(rand() * words.length)]!;
  const randomVector = () => {
    const v = new Float32Array(DIMS);
    for (let i = 0; i < DIMS; i++) v[i] = rand() - 0.5;
    return v;
  };
  const docs = Array.from({ length: N }, (_x, i) => ({
    id: `svc-${i}`,
    name: `${pick()}-${pick()}-${i}`,
    description: Array.from({ length: 12 + Math.floor(rand() * 20) }, pick).join(' '),
  }));
  const vectors = Array.from({ length: N }, randomVector);

  globalThis.gc?.();
  const mem0 = process.memoryUsage();
  const index = createSearchIndex({ dims: DIMS });
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    void index.upsert(docs[i]!);
    index.setVector(docs[i]!.id, vectors[i]!);
  }
  const indexSeconds = (performance.now() - t0) / 1000;
  globalThis.gc?.();
  const mem1 = process.memoryUsage();
  console.log(`  indexing: ${Math.round(N / indexSeconds).toLocaleString('en')} services/s (BM25 + vector insert, ${indexSeconds.toFixed(2)} s)`);
  const heap = (mem1.heapUsed - mem0.heapUsed + (mem1.arrayBuffers - mem0.arrayBuffers)) / N;
  const rss = (mem1.rss - mem0.rss) / N;
  console.log(
    `  memory per service: ${(rss / 1024).toFixed(2)} KiB RSS growth (vectors alone ${(index.vectorBytes() / N / 1024).toFixed(2)} KiB; JS heap + buffers ${(heap / 1024).toFixed(2)} KiB)${globalThis.gc ? '' : ' [run with --expose-gc for steadier figures]'}`,
  );

  // Queries: 1-4 words; the vector is near a random stored one, so some services pass the cosine floor.
  const qs = Array.from({ length: 300 }, () => {
    const text = Array.from({ length: 1 + Math.floor(rand() * 4) }, pick).join(' ');
    const near = vectors[Math.floor(rand() * N)]!;
    const noise = randomVector();
    const v = new Float32Array(DIMS);
    for (let i = 0; i < DIMS; i++) v[i] = near[i]! * 3 + noise[i]!;
    return { text, v };
  });
  for (const q of qs.slice(0, 20)) index.searchWithVector(q.text, q.v, { limit: 10 });
  const times: number[] = [];
  const kwTimes: number[] = [];
  let returned = 0;
  for (const q of qs) {
    const t = performance.now();
    returned += index.searchWithVector(q.text, q.v, { limit: 10 }).length;
    times.push(performance.now() - t);
    const k = performance.now();
    index.searchWithVector(q.text, null, { limit: 10 });
    kwTimes.push(performance.now() - k);
  }
  times.sort((a, b) => a - b);
  kwTimes.sort((a, b) => a - b);
  console.log(
    `  hybrid query (excl. embedding): p50 ${ms(pct(times, 50))}, p95 ${ms(pct(times, 95))}  [targets 20 / 50 ms; ${(returned / qs.length).toFixed(1)} results per query]`,
  );
  console.log(`  keyword-only query: p50 ${ms(pct(kwTimes, 50))}, p95 ${ms(pct(kwTimes, 95))}`);
  if (embedder) {
    const et: number[] = [];
    for (const q of qs.slice(0, 30)) {
      const t = performance.now();
      await embedder.embed([q.text], 'query');
      et.push(performance.now() - t);
    }
    et.sort((a, b) => a - b);
    console.log(`  query embedding (separately): p50 ${ms(pct(et, 50))}, p95 ${ms(pct(et, 95))}`);
  } else {
    console.log('  query embedding: not measured (no model available)');
  }

  const s0 = performance.now();
  const snap = index.snapshot();
  const snapMs = performance.now() - s0;
  const copy = createSearchIndex({ dims: DIMS });
  const l0 = performance.now();
  await copy.load(snap);
  const loadMs = performance.now() - l0;
  const check = copy
    .searchWithVector(qs[0]!.text, qs[0]!.v, { limit: 10 })
    .map((h) => h.id)
    .join();
  const same =
    check ===
    index
      .searchWithVector(qs[0]!.text, qs[0]!.v, { limit: 10 })
      .map((h) => h.id)
      .join();
  console.log(
    `  snapshot: ${(snap.length / 1024 / 1024).toFixed(1)} MiB, written in ${ms(snapMs)}, loaded in ${ms(loadMs)} (${copy.size.toLocaleString('en')} services, same results: ${same})`,
  );
  if (process.env['BENCH_HNSW'] === '0') console.log('\nApproximate vector index: skipped (BENCH_HNSW=0)');
  else await approximate(index, snap, qs, times);
}

/** The same 100k services with vectorIndex 'hnsw' (usearch), against the exact flat index. */
async function approximate(flat: SearchIndex, snap: Uint8Array, qs: Array<{ text: string; v: Float32Array }>, flatTimes: number[]) {
  console.log("\nApproximate vector index (vectorIndex: 'hnsw', usearch HNSW, connectivity 16, i8 graph, candidates max(100, 4 x limit))");
  globalThis.gc?.();
  const rss0 = process.memoryUsage().rss;
  const approx = createSearchIndex({ dims: DIMS, vectorIndex: 'hnsw' });
  await approx.idle();
  const st = approx.status();
  if (st.vectorIndex !== 'hnsw') {
    console.log(`  not measured: ${st.vectorIndexReason ?? 'usearch not loaded'}`);
    return;
  }
  const b0 = performance.now();
  await approx.load(snap);
  const buildS = (performance.now() - b0) / 1000;
  globalThis.gc?.();
  const rss = (process.memoryUsage().rss - rss0) / N;
  console.log(
    `  snapshot load incl. graph build: ${buildS.toFixed(2)} s (${Math.round(N / buildS).toLocaleString('en')} vectors/s, all cores); RSS growth ${(rss / 1024).toFixed(2)} KiB per service (index + graph)`,
  );

  for (const q of qs.slice(0, 20)) approx.searchWithVector(q.text, q.v, { limit: 10 });
  const times: number[] = [];
  let found = 0;
  let total = 0;
  let identical = 0;
  for (const q of qs) {
    const t = performance.now();
    const got = approx.searchWithVector(q.text, q.v, { limit: 10 });
    times.push(performance.now() - t);
    const exact = flat.searchWithVector(q.text, q.v, { limit: 10 }).map((h) => h.id);
    const ids = new Set(got.map((h) => h.id));
    found += exact.filter((id) => ids.has(id)).length;
    total += exact.length;
    if (got.map((h) => h.id).join() === exact.join()) identical++;
  }
  times.sort((a, b) => a - b);
  console.log(
    `  hybrid query (excl. embedding): p50 ${ms(pct(times, 50))}, p95 ${ms(pct(times, 95))}  [flat: p50 ${ms(pct(flatTimes, 50))}, p95 ${ms(pct(flatTimes, 95))}]`,
  );
  console.log(`  hybrid recall@10 against exact (flat): ${(found / Math.max(1, total)).toFixed(4)}; identical top 10: ${identical}/${qs.length}`);
}

const embedder = await relevance();
health();
if (N > 0) await scale(embedder);
