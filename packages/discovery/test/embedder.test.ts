import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmbedder, createSearchIndex, modelPath, type Embedder } from '@farebox/discovery';
import { writeTinyModel } from '@farebox/test-kit/tiny-model';

let root: string;
let modelId: string;
let embedder: Embedder;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'farebox-discovery-'));
  modelId = await writeTinyModel(root);
  embedder = createEmbedder({ modelDir: root, modelId, dtype: 'fp32', allowRemote: false });
  expect(await embedder.load()).toMatchObject({ state: 'ready', dims: 384 });
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Counts model calls without changing what the embedder does. */
function counting(inner: Embedder) {
  const calls: string[][] = [];
  const wrapped: Embedder = {
    modelId: inner.modelId,
    dims: inner.dims,
    load: () => inner.load(),
    status: () => inner.status(),
    embed: (texts, kind) => {
      if (kind === 'passage') calls.push([...texts]);
      return inner.embed(texts, kind);
    },
  };
  return { wrapped, calls };
}

describe('the embedder on a model directory built by the test', () => {
  it('loads through transformers.js and maps one concept in three languages to one direction', async () => {
    const [en, es, fr, other] = await embedder.embed(['weather', 'pronóstico del clima', 'météo', 'translation'], 'query');
    const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, v, i) => s + v * b[i]!, 0);
    expect(en).toHaveLength(384);
    expect(dot(en!, es!)).toBeCloseTo(1, 5);
    expect(dot(en!, fr!)).toBeCloseTo(1, 5);
    expect(dot(en!, other!)).toBeCloseTo(0, 5);
  });

  it('gives a keyword-only match 0.6 and a vector-only match 0.4 of the score', async () => {
    const index = createSearchIndex({ embedder, cosineFloor: 0.5 });
    await Promise.all([
      // "weather" in the text, but its vector points mostly at payments (cos 0.32 <= floor 0.5)
      index.upsert({ id: 'keyword-only', name: 'weather', description: 'payment payment payment' }),
      // no shared word, same meaning (cos 1)
      index.upsert({ id: 'vector-only', name: 'meteo', description: 'clima' }),
      index.upsert({ id: 'both', name: 'weather', description: 'clima' }),
      index.upsert({ id: 'neither', name: 'lingua', description: 'translation' }),
    ]);
    const hits = await index.search('weather');
    expect(hits.map((h) => h.id)).toEqual(['both', 'keyword-only', 'vector-only']);
    const [both, kw, vec] = hits;
    // A full keyword match gives BM25' near 1 (0.9 to 1: it saturates, see docs/search.md "Fusion").
    expect(both!.bm25).toBeGreaterThan(0.9);
    expect(both!.cosine).toBe(1);
    expect(both!.score).toBe(0.6 * both!.bm25 + 0.4);
    expect(kw!.bm25).toBeGreaterThan(0.9);
    expect(kw!.cosine).toBe(0);
    expect(kw!.score).toBe(0.6 * kw!.bm25);
    expect(kw!.raw.cosine).toBeCloseTo(1 / Math.sqrt(10), 5);
    expect(vec).toMatchObject({ bm25: 0 });
    expect(vec!.cosine).toBeCloseTo(1, 6);
    expect(vec!.score).toBeCloseTo(0.4, 6);
    expect(index.status()).toMatchObject({ mode: 'hybrid', model: modelId, vectors: 4, pendingEmbeddings: 0 });
  });

  it('finds a service described in English from Spanish and French queries through the embedding side', async () => {
    const index = createSearchIndex({ embedder, cosineFloor: 0.5 });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    await index.upsert({ id: 'lingua', name: 'lingua', description: 'text translation' });
    for (const query of ['pronóstico del clima', 'météo']) {
      const hits = await index.search(query);
      expect(hits.map((h) => h.id)).toEqual(['skycast']);
      expect(hits[0]!.bm25).toBe(0);
      expect(hits[0]!.score).toBeCloseTo(0.4, 6);
    }
    const keywordOnly = createSearchIndex();
    await keywordOnly.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    expect(await keywordOnly.search('pronóstico del clima')).toEqual([]);
  });

  it('returns nothing for a nonsense query in hybrid mode', async () => {
    const index = createSearchIndex({ embedder, cosineFloor: 0.5 });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    await index.upsert({ id: 'lingua', name: 'lingua', description: 'text translation' });
    expect(await index.search('xqzv blorf')).toEqual([]);
  });

  it('makes a service keyword-searchable before its vector exists, and removes both at once', async () => {
    const index = createSearchIndex({ embedder, cosineFloor: 0.5 });
    const embedded = index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    expect(index.searchWithVector('weather', null).map((h) => h.id)).toEqual(['skycast']);
    await embedded;
    expect((await index.search('clima')).map((h) => h.id)).toEqual(['skycast']);
    index.remove('skycast');
    expect(await index.search('clima')).toEqual([]);
    expect(await index.search('weather')).toEqual([]);
    expect(index.status()).toMatchObject({ documents: 0, vectors: 0 });
  });

  it('re-embeds only documents whose text changed', async () => {
    const { wrapped, calls } = counting(embedder);
    const index = createSearchIndex({ embedder: wrapped, cosineFloor: 0.5 });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast', meta: { price: 1n } });
    expect(calls.flat()).toEqual(['skycast: weather forecast']);
    expect(index.get('skycast')?.meta).toEqual({ price: 1n });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'payment' });
    expect(calls.flat()).toEqual(['skycast: weather forecast', 'skycast: payment']);
    expect((await index.search('pago')).map((h) => h.id)).toEqual(['skycast']);
    expect(await index.search('clima')).toEqual([]);
  });

  it('reloads a snapshot without re-embedding when the model is the same', async () => {
    const index = createSearchIndex({ embedder, cosineFloor: 0.5 });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    const { wrapped, calls } = counting(embedder);
    const copy = createSearchIndex({ embedder: wrapped, cosineFloor: 0.5 });
    await copy.load(index.snapshot());
    expect(calls).toEqual([]);
    expect(copy.status()).toMatchObject({ vectors: 1 });
    expect((await copy.search('clima')).map((h) => h.id)).toEqual(['skycast']);
  });
});

describe('without a usable model', () => {
  it('runs keyword-only and says why when the model directory is missing', async () => {
    const missing = join(root, 'nowhere');
    const index = createSearchIndex({ embedder: createEmbedder({ modelDir: missing, allowRemote: false }) });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    expect((await index.search('weather')).map((h) => h.id)).toEqual(['skycast']);
    expect(await index.search('clima')).toEqual([]);
    const status = index.status();
    expect(status.mode).toBe('keyword-only');
    expect(status.reason).toContain(`not found in ${missing}`);
    expect(status.reason).toContain('FAREBOX_MODEL_DIR');
  });

  it('runs keyword-only and says why when the model file is corrupt', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-broken-'));
    const id = await writeTinyModel(dir, 'farebox-test/broken');
    await writeFile(join(modelPath(dir, id), 'onnx', 'model.onnx'), 'not an onnx graph');
    const broken = createEmbedder({ modelDir: dir, modelId: id, dtype: 'fp32', allowRemote: false });
    const index = createSearchIndex({ embedder: broken });
    await index.upsert({ id: 'skycast', name: 'skycast', description: 'weather forecast' });
    expect((await index.search('weather')).map((h) => h.id)).toEqual(['skycast']);
    expect(index.status()).toMatchObject({ mode: 'keyword-only' });
    expect(index.status().reason).toMatch(/^embedding model unavailable: /);
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses a model whose vectors have the wrong size', async () => {
    const wrong = createEmbedder({ modelDir: root, modelId, dtype: 'fp32', allowRemote: false, dims: 768 });
    expect(await wrong.load()).toMatchObject({ state: 'failed', reason: expect.stringContaining('expected 768') });
  });

  it('reads FAREBOX_MODEL_DIR and then stays offline by default', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-env-'));
    await mkdir(dir, { recursive: true });
    const before = process.env['FAREBOX_MODEL_DIR'];
    process.env['FAREBOX_MODEL_DIR'] = dir;
    try {
      const e = createEmbedder();
      expect(e.options).toMatchObject({ modelDir: dir, allowRemote: false, modelId: 'Xenova/multilingual-e5-small' });
      expect(await e.load()).toMatchObject({ state: 'failed' });
    } finally {
      if (before === undefined) delete process.env['FAREBOX_MODEL_DIR'];
      else process.env['FAREBOX_MODEL_DIR'] = before;
      await rm(dir, { recursive: true, force: true });
    }
  });
});
