import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSearchIndex } from '@farebox/discovery';

const DIMS = 64;

function vectors(count: number, seed: number): Float32Array[] {
  let s = seed >>> 0;
  const rand = () => (s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  return Array.from({ length: count }, () => Float32Array.from({ length: DIMS }, () => rand() - 0.5));
}

async function built(count: number, seed: number) {
  const index = createSearchIndex({ dims: DIMS, vectorIndex: 'hnsw' });
  vectors(count, seed).forEach((v, i) => {
    void index.upsert({ id: `svc-${i}`, name: `svc-${i}`, description: `service number ${i}` });
    index.setVector(`svc-${i}`, v);
  });
  await index.idle();
  return index;
}

describe('snapshots with the HNSW graph', () => {
  it('restores the saved graph instead of rebuilding it, with the same answers; removals stay removed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-graph-'));
    const index = await built(500, 3);
    expect(index.status().vectorIndex).toBe('hnsw');
    index.remove('svc-7');
    const graphPath = join(dir, 'graph.usearch');
    const { bytes, graphSha256 } = index.snapshotWithGraph({ graphPath });
    expect(graphSha256).toMatch(/^[0-9a-f]{64}$/);

    const restored = createSearchIndex({ dims: DIMS, vectorIndex: 'hnsw' });
    await restored.load(bytes, { graphPath, graphSha256: graphSha256! });
    await restored.idle();
    expect(restored.status()).toMatchObject({ vectorIndex: 'hnsw', graphLoadedFromSnapshot: true, documents: 499, vectors: 499 });
    const queries = vectors(20, 11);
    for (const q of queries) {
      expect(restored.searchWithVector('', q, { limit: 10 }).map((h) => h.id)).toEqual(index.searchWithVector('', q, { limit: 10 }).map((h) => h.id));
    }
    expect(restored.has('svc-7')).toBe(false);
    // The restored graph keeps working: an upsert and a removal show at once.
    const v = vectors(1, 99)[0]!;
    await restored.upsert({ id: 'fresh', name: 'fresh', description: 'a new one' });
    restored.setVector('fresh', v);
    expect(restored.searchWithVector('', v, { limit: 1 })[0]?.id).toBe('fresh');
    restored.remove('fresh');
    expect(restored.searchWithVector('', v, { limit: 5 }).map((h) => h.id)).not.toContain('fresh');
  });

  it('rebuilds when the graph file belongs to another snapshot, was damaged or is missing', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'farebox-graph-'));
    const small = await built(50, 5);
    const otherGraph = join(dir, 'other.usearch');
    const other = small.snapshotWithGraph({ graphPath: otherGraph }).graphSha256!;
    const index = await built(300, 6);
    const ownGraph = join(dir, 'own.usearch');
    const { bytes, graphSha256 } = index.snapshotWithGraph({ graphPath: ownGraph });
    // A damaged copy of the right graph (usearch would crash on it): its digest no longer matches.
    await writeFile(ownGraph, 'not a graph');
    const cases: Array<[string, string]> = [
      [otherGraph, other],
      [ownGraph, graphSha256!],
      [join(dir, 'missing.usearch'), graphSha256!],
    ];
    for (const [graphPath, sha] of cases) {
      const restored = createSearchIndex({ dims: DIMS, vectorIndex: 'hnsw' });
      await restored.load(bytes, { graphPath, graphSha256: sha });
      await restored.idle();
      const status = restored.status();
      expect(status.vectorIndex).toBe('hnsw');
      expect(status.graphLoadedFromSnapshot).toBeUndefined();
      const q = vectors(1, 42)[0]!;
      expect(restored.searchWithVector('', q, { limit: 10 }).map((h) => h.id)).toEqual(index.searchWithVector('', q, { limit: 10 }).map((h) => h.id));
    }
  });
});
