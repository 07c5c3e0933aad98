import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder, createSearchIndex, DEFAULT_MODEL_ID, type Embedder } from '@farebox/discovery';
import { startDevnet, type Devnet } from '@farebox/devnet';
import { encodeStrKey, randomBytes } from '@farebox/protocol';
import { createAccounts, createRegistryClient, keypairSigner } from '@farebox/stellar';
import { startDiscovery, type RunningDiscovery } from '../src/index.js';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';
import { eventually } from '@farebox/test-kit';

// The real model-loading path (transformers.js + onnxruntime) with a tiny model
// written under the production model's id, as `farebox model fetch` or a copied
// folder would leave it in FAREBOX_MODEL_DIR.
let devnet: Devnet;
let modelDir: string;
const running: RunningDiscovery[] = [];

/** Counts passage embeddings without changing what the embedder does. */
function counting(inner: Embedder) {
  const passages: string[] = [];
  const embedder: Embedder = {
    modelId: inner.modelId,
    dims: inner.dims,
    load: () => inner.load(),
    status: () => inner.status(),
    embed: (texts, kind) => {
      if (kind === 'passage') passages.push(...texts);
      return inner.embed(texts, kind);
    },
  };
  return { embedder, passages };
}

async function replica(dataDir: string, dir = modelDir) {
  const { embedder, passages } = counting(createEmbedder({ modelDir: dir, allowRemote: false }));
  const r = await startDiscovery({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    network: 'local',
    devnetUrl: devnet.url,
    env: {},
    pollIntervalMs: 50,
    snapshotIntervalMs: 0,
    searchIndex: createSearchIndex({ embedder, vectorIndex: 'hnsw' }),
  });
  running.push(r);
  return { r, passages };
}

const health = async (r: RunningDiscovery) => (await fetch(`${r.url}/health`)).json();
const search = async (r: RunningDiscovery, q: string) =>
  (await (await fetch(`${r.url}/search?q=${encodeURIComponent(q)}`)).json()) as {
    mode: string;
    search_mode: string;
    results: Array<{ service: string; bm25: number; cosine: number }>;
  };

beforeAll(async () => {
  devnet = await startDevnet({ port: 0, closeIntervalMs: 'instant' });
  modelDir = await mkdtemp(join(tmpdir(), 'farebox-models-'));
  await writeTinyModel(modelDir, DEFAULT_MODEL_ID, 'model_quantized.onnx');
  const owner = keypairSigner(encodeStrKey('secretSeed', randomBytes(32)));
  await createAccounts(devnet.network).fund(owner.publicKey);
  await createRegistryClient(devnet.network).register(owner, {
    service: 'skycast',
    pricePerCall: 10_000n,
    endpoint: 'https://skycast.example/',
    description: 'Weather forecast for the hub',
  });
}, 60_000);

afterAll(async () => {
  for (const r of running) await r.close().catch(() => undefined);
  await devnet?.close();
});

describe('discovery with the embedding model', () => {
  it('searches hybrid across languages, and a restart neither re-embeds the catalog nor rebuilds the graph', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'farebox-disc-model-'));
    const first = await replica(dataDir);
    // A Spanish query with no word in common: found by its vector alone.
    const found = await eventually('skycast found by its Spanish description', async () =>
      (await search(first.r, 'pronóstico del tiempo')).results.find((h) => h.service === 'skycast'),
    );
    expect(found.bm25).toBe(0);
    expect(found.cosine).toBeGreaterThan(0);
    expect(await health(first.r)).toMatchObject({
      ready: true,
      mode: 'hybrid',
      mode_reason: null,
      model: DEFAULT_MODEL_ID,
      documents: 1,
      vectors: 1,
      vector_index: 'hnsw',
    });
    expect(first.passages).toEqual(['skycast: Weather forecast for the hub']);
    await first.r.close();

    const second = await replica(dataDir);
    const h = await health(second.r);
    expect(h).toMatchObject({ ready: true, mode: 'hybrid', documents: 1, vectors: 1, vector_index: 'hnsw', restored_from: { graph_loaded: true } });
    const again = await search(second.r, 'pronóstico del tiempo');
    expect(again.results.map((r) => r.service)).toEqual(['skycast']);
    // The answer says which ranking served this search.
    expect(again).toMatchObject({ mode: 'hybrid', search_mode: 'hybrid' });
    expect(second.passages).toEqual([]);
  });

  it('without the model: keyword-only, and /health says why', async () => {
    const { r } = await replica(await mkdtemp(join(tmpdir(), 'farebox-disc-nomodel-')), await mkdtemp(join(tmpdir(), 'farebox-empty-models-')));
    await search(r, 'weather');
    const h = await health(r);
    expect(h).toMatchObject({ ready: true, mode: 'keyword-only', model: DEFAULT_MODEL_ID, vectors: 0 });
    expect(h.mode_reason).toMatch(/^embedding model unavailable: .*not found/);
    const keyword = await search(r, 'weather forecast');
    expect(keyword.results.map((x) => x.service)).toEqual(['skycast']);
    expect(keyword).toMatchObject({ mode: 'keyword-only', search_mode: 'keyword' });
    expect(await search(r, 'pronóstico del tiempo')).toMatchObject({ search_mode: 'keyword', results: [] });
  });
});
