import { describe, expect, it } from 'vitest';
import { createSearchIndex, type SearchIndex } from '@farebox/discovery';

const DIMS = 128;

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function randomVectors(count: number, seed: number): Float32Array[] {
  const rand = rng(seed);
  return Array.from({ length: count }, () => {
    const v = new Float32Array(DIMS);
    for (let i = 0; i < DIMS; i++) v[i] = rand() - 0.5;
    return v;
  });
}

/** A query near a stored vector (as a real query is near its answers), plus noise. */
function nearQuery(base: Float32Array, noise: Float32Array): Float32Array {
  const v = new Float32Array(DIMS);
  for (let i = 0; i < DIMS; i++) v[i] = base[i]! * 2 + noise[i]!;
  return v;
}

const WORDS = ['weather', 'forecast', 'translate', 'invoice', 'payment', 'image', 'speech', 'maps', 'stock', 'news', 'email', 'search'];

async function build(vectorIndex: 'flat' | 'hnsw', vectors: Float32Array[], extra: Parameters<typeof createSearchIndex>[0] = {}) {
  const index = createSearchIndex({ dims: DIMS, vectorIndex, ...extra });
  vectors.forEach((v, i) => {
    void index.upsert({ id: `svc-${i}`, name: `svc-${i}`, description: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} service` });
    index.setVector(`svc-${i}`, v);
  });
  await index.idle();
  return index;
}

const ids = (index: SearchIndex, q: string, v: Float32Array | null, limit = 10) => index.searchWithVector(q, v, { limit }).map((h) => h.id);

describe('approximate (hnsw) vector index', () => {
  it('finds at least 95% of the exact top 10 on 3,000 random vectors for queries near a service (85% for pure noise), or falls back to the exact index and says why', async () => {
    const vectors = randomVectors(3000, 7);
    const noise = randomVectors(60, 99);
    // Vector-only ranking with every cosine above the floor: the flat index's top 10 is the exact top 10.
    const opts = { weights: { bm25: 0, vector: 1 }, cosineFloor: -1 };
    const flat = await build('flat', vectors, opts);
    const approx = await build('hnsw', vectors, opts);
    const status = approx.status();
    // Queries near a stored vector (as real queries are near their answers), and pure noise (the hard case for a graph).
    const found = { near: 0, noise: 0 };
    let perKind = 0;
    for (let q = 0; q < noise.length; q++) {
      for (const kind of ['near', 'noise'] as const) {
        const v = kind === 'near' ? nearQuery(vectors[(q * 37) % vectors.length]!, noise[q]!) : noise[q]!;
        const exact = ids(flat, '', v);
        const got = new Set(ids(approx, '', v));
        expect(exact).toHaveLength(10);
        found[kind] += exact.filter((id) => got.has(id)).length;
      }
      perKind += 10;
    }
    if (status.vectorIndex === 'hnsw') {
      expect(status.vectorIndexReason).toBeUndefined();
      expect(found.near / perKind).toBeGreaterThanOrEqual(0.95);
      expect(found.noise / perKind).toBeGreaterThanOrEqual(0.85);
    } else {
      expect(status.vectorIndexReason).toMatch(/usearch could not be loaded/);
      expect(found).toEqual({ near: perKind, noise: perKind });
    }
  });

  it('gives hybrid results with the documented scores: exact cosines, same fusion and floor as the flat index', async () => {
    const vectors = randomVectors(2000, 11);
    const noise = randomVectors(20, 5);
    const flat = await build('flat', vectors, { cosineFloor: 0.3 });
    const approx = await build('hnsw', vectors, { cosineFloor: 0.3 });
    let same = 0;
    for (let q = 0; q < noise.length; q++) {
      const v = nearQuery(vectors[(q * 101) % vectors.length]!, noise[q]!);
      const text = `${WORDS[q % WORDS.length]} ${WORDS[(q * 5) % WORDS.length]}`;
      const exact = flat.searchWithVector(text, v, { limit: 10 });
      const got = approx.searchWithVector(text, v, { limit: 10 });
      for (const h of got) {
        expect(h.score).toBeCloseTo(0.6 * h.bm25 + 0.4 * h.cosine, 12);
        expect(h.score).toBeGreaterThanOrEqual(approx.floor);
        const twin = exact.find((e) => e.id === h.id);
        if (twin) {
          expect(h.raw.cosine).toBeCloseTo(twin.raw.cosine!, 5);
          expect(h.score).toBeCloseTo(twin.score, 5);
        }
      }
      if (got.map((h) => h.id).join() === exact.map((h) => h.id).join()) same++;
    }
    expect(same).toBeGreaterThanOrEqual(19);
  });

  it('forgets removed services and follows upserts in both indexes', async () => {
    const vectors = randomVectors(500, 3);
    const index = await build('hnsw', vectors, { weights: { bm25: 0, vector: 1 }, cosineFloor: 0.5 });
    const target = vectors[42]!;
    expect(ids(index, '', target, 1)).toEqual(['svc-42']);

    expect(index.remove('svc-42')).toBe(true);
    expect(ids(index, '', target)).not.toContain('svc-42');

    // The freed slot goes to a new service with the same vector.
    void index.upsert({ id: 'newcomer', name: 'newcomer', description: 'weather' });
    index.setVector('newcomer', target);
    expect(ids(index, '', target, 1)).toEqual(['newcomer']);

    // New text drops the old vector until the new one is stored.
    const moved = vectors[7]!;
    void index.upsert({ id: 'newcomer', name: 'newcomer', description: 'tide tables' });
    expect(ids(index, '', target)).not.toContain('newcomer');
    index.setVector('newcomer', moved);
    expect(ids(index, '', moved, 2).sort()).toEqual(['newcomer', 'svc-7']);
    expect(ids(index, '', target)).not.toContain('newcomer');
    expect(index.status().vectors).toBe(500);
  });

  it('rebuilds the graph from a snapshot and gives the same results as the source', async () => {
    const vectors = randomVectors(800, 21);
    const index = await build('hnsw', vectors);
    index.remove('svc-3');
    const copy = createSearchIndex({ dims: DIMS, vectorIndex: 'hnsw' });
    await copy.idle();
    await copy.load(index.snapshot());
    expect(copy.status()).toMatchObject({ vectors: 799, vectorIndex: index.status().vectorIndex });
    const noise = randomVectors(10, 8);
    for (let q = 0; q < noise.length; q++) {
      const v = nearQuery(vectors[q * 50 + 4]!, noise[q]!);
      expect(ids(copy, 'weather', v)).toEqual(ids(index, 'weather', v));
    }
    expect(ids(copy, '', vectors[3]!)).not.toContain('svc-3');
  });

  it('falls back to the exact flat index when usearch cannot be loaded, and says why', async () => {
    const vectors = randomVectors(300, 17);
    const index = await build('hnsw', vectors, {
      hnswLoader: () => Promise.reject(new Error('no prebuilt binary for this platform')),
    });
    const flat = await build('flat', vectors);
    expect(index.status()).toMatchObject({
      vectorIndex: 'flat',
      vectorIndexReason: expect.stringMatching(/flat index.*usearch could not be loaded \(no prebuilt binary for this platform\)/),
      vectors: 300,
    });
    const v = nearQuery(vectors[9]!, randomVectors(1, 4)[0]!);
    expect(index.searchWithVector('weather', v, { limit: 10 })).toEqual(flat.searchWithVector('weather', v, { limit: 10 }));
    expect(flat.status().vectorIndex).toBe('flat');
    expect(flat.status().vectorIndexReason).toBeUndefined();
  });

  it('refuses an unknown vector index kind', () => {
    expect(() => createSearchIndex({ vectorIndex: 'ivf' as 'flat' })).toThrow(/vectorIndex/);
  });
});
