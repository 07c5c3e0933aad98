import { z } from 'zod';
import { ANALYZER } from './analyze.js';
import { Bm25Index } from './bm25.js';
import { DiscoveryError } from './errors.js';
import { HnswVectorIndex, loadUsearch } from './hnsw.js';
import { fuseSearch, limitOf, type FusionContext } from './search-fusion.js';
import { decodeIndex, encodeIndex } from './search-snapshot.js';
import type { EmbedderStatus } from './embedder-types.js';
import type { FusionWeights, SearchHit, SearchIndex, SearchIndexOptions, SearchOptions, SearchStatus, ServiceDocument, StoredDoc } from './search-types.js';
import { FlatVectorIndex } from './vectors.js';

const DocSchema = z.object({
  id: z.string().min(1).max(256),
  name: z.string().max(256),
  description: z.string().max(8192),
  meta: z.unknown().optional(),
});

const OptionsSchema = z.object({
  weights: z
    .object({ bm25: z.number().min(0).max(1), vector: z.number().min(0).max(1) })
    .refine((w) => Math.abs(w.bm25 + w.vector - 1) < 1e-9, 'weights.bm25 + weights.vector must equal 1')
    .optional(),
  floor: z.number().min(0).max(1).optional(),
  cosineFloor: z.number().min(-1).lt(1).optional(),
  dims: z.number().int().positive().max(4096).optional(),
  batchSize: z.number().int().positive().max(1024).optional(),
  vectorIndex: z.enum(['flat', 'hnsw']).optional(),
  bm25Normalization: z.enum(['knee', 'cap']).optional(),
});

interface Waiter {
  text: string;
  resolve: () => void;
}

/**
 * A hybrid BM25 + vector index. See docs/search.md for the exact formulas.
 *
 * @example
 * const index = createSearchIndex({ embedder: createEmbedder() });
 * await index.upsert({ id: 'weather-now', name: 'weather-now', description: 'Hourly forecasts' });
 * const hits = await index.search('pronóstico del tiempo', { limit: 5 });
 */
export function createSearchIndex(options: SearchIndexOptions = {}): SearchIndex {
  const parsed = OptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new DiscoveryError('INVALID_OPTIONS', parsed.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`).join('; '));
  }
  const embedder = options.embedder;
  if (embedder && options.dims !== undefined && options.dims !== embedder.dims) {
    throw new DiscoveryError('INVALID_OPTIONS', `dims ${options.dims} differs from the embedder's ${embedder.dims}`);
  }
  const weights: FusionWeights = { ...(options.weights ?? { bm25: 0.6, vector: 0.4 }) };
  const floor = options.floor ?? 0.05;
  const cosineFloor = options.cosineFloor ?? 0.8;
  const batchSize = options.batchSize ?? 16;
  const dims = embedder?.dims ?? options.dims ?? 384;

  const bm25 = new Bm25Index();
  const vectors = new FlatVectorIndex(dims);
  const docs = new Map<string, StoredDoc>();
  const slotDocs: Array<StoredDoc | undefined> = [];
  const freeSlots: number[] = [];
  const queue = new Map<string, Waiter[]>();
  let draining: Promise<void> | null = null;
  let embedFailure: string | undefined;

  // Approximate index: proposes candidates only; `vectors` keeps the exact rows.
  let hnsw: HnswVectorIndex | null = null;
  let hnswReason: string | undefined;
  let hnswLoading: Promise<void> | null = null;
  /** A graph file saved with the loaded snapshot, read when usearch is ready instead of a rebuild. */
  let pendingGraph: { path: string; sha256: string } | undefined;
  let graphLoads = 0;
  const restoreGraph = (graph: HnswVectorIndex): void => {
    const file = pendingGraph;
    pendingGraph = undefined;
    if (file && graph.loadFrom(file.path, file.sha256, vectors, slotDocs.length)) {
      graphLoads++;
      return;
    }
    graph.rebuild(vectors, slotDocs.length);
  };
  if (options.vectorIndex === 'hnsw') {
    hnswReason = 'approximate index is loading';
    const loader = options.hnswLoader ?? loadUsearch;
    hnswLoading = Promise.resolve()
      .then(loader)
      .then((mod) => {
        const graph = new HnswVectorIndex(mod, dims);
        restoreGraph(graph);
        hnsw = graph;
        hnswReason = undefined;
      })
      .catch((err: unknown) => {
        hnswReason = `approximate index unavailable, using the exact flat index: usearch could not be loaded (${(err instanceof Error ? err.message : String(err)).split('\n')[0]})`;
      })
      .finally(() => {
        hnswLoading = null;
      });
  }

  function storeVector(slot: number, vector: ArrayLike<number>): void {
    vectors.set(slot, vector);
    hnsw?.set(slot, vectors.get(slot)!);
  }

  function deleteVector(slot: number): void {
    vectors.delete(slot);
    hnsw?.delete(slot);
  }

  /** Documents whose embedding was skipped while the model downloaded: embedded once it is ready. */
  const awaitingModel = new Set<string>();
  /**
   * The model's status, waiting for a load from disk but not for a download:
   * meanwhile the index answers keyword-only and queues nothing.
   */
  function model(): EmbedderStatus | Promise<EmbedderStatus> {
    const s = embedder!.status();
    return s.state === 'downloading' ? s : embedder!.load();
  }
  if (embedder) {
    // A model fetched in the background: embed what was indexed meanwhile (the same running index turns hybrid).
    void embedder.load().then(backfill);
  }
  function backfill(): void {
    if (embedder?.status().state !== 'ready' || awaitingModel.size === 0) return;
    const ids = [...awaitingModel];
    awaitingModel.clear();
    for (const id of ids) {
      const d = docs.get(id);
      if (d && !vectors.has(d.slot) && !queue.has(id)) void schedule(id, d.text);
    }
  }

  function allocate(): number {
    const slot = freeSlots.pop();
    if (slot !== undefined) return slot;
    slotDocs.push(undefined);
    return slotDocs.length - 1;
  }

  function settle(id: string): void {
    const waiters = queue.get(id);
    queue.delete(id);
    for (const w of waiters ?? []) w.resolve();
  }

  async function drain(): Promise<void> {
    if (!embedder) return;
    const status = await model();
    while (queue.size > 0) {
      // The first batchSize keys (not a copy of the whole queue: 100k queued documents made that quadratic).
      const batch: string[] = [];
      for (const id of queue.keys()) {
        batch.push(id);
        if (status.state === 'ready' && batch.length >= batchSize) break;
      }
      const taken = batch.map((id) => {
        const waiters = queue.get(id) ?? [];
        queue.delete(id);
        return waiters;
      });
      const live = batch.map((id) => docs.get(id)).filter((d): d is StoredDoc => d !== undefined);
      if (status.state === 'downloading') for (const d of live) awaitingModel.add(d.id);
      const texts = live.map((d) => d.text);
      if (status.state === 'ready' && live.length > 0) {
        try {
          const out = await embedder.embed(texts, 'passage');
          embedFailure = undefined;
          live.forEach((d, i) => {
            // A document replaced or removed while the model ran is queued again (or gone).
            if (docs.get(d.id) === d && out[i]) storeVector(d.slot, out[i]!);
          });
        } catch (err) {
          embedFailure = `passage embedding failed: ${err instanceof Error ? err.message : String(err)}`;
        }
      }
      for (const waiters of taken) for (const w of waiters) w.resolve();
    }
  }

  function kick(): void {
    if (draining) return;
    draining = drain().finally(() => {
      draining = null;
      if (queue.size > 0) kick();
      // The download may have finished while this drain skipped documents.
      else backfill();
    });
  }

  function schedule(id: string, text: string): Promise<void> {
    return new Promise<void>((resolve) => {
      const list = queue.get(id) ?? [];
      list.push({ text, resolve });
      queue.set(id, list);
      kick();
    });
  }

  function upsertSync(doc: ServiceDocument): { stored: StoredDoc; embed: boolean } {
    // Exactly what is stored (a catalog re-listed after a snapshot load): nothing to check or change.
    const same = doc !== null && typeof doc === 'object' && typeof doc.id === 'string' ? docs.get(doc.id) : undefined;
    if (same && same.name === doc.name && same.description === doc.description && same.meta === doc.meta) return { stored: same, embed: false };
    const parsedDoc = DocSchema.safeParse(doc);
    if (!parsedDoc.success) {
      throw new DiscoveryError('INVALID_DOCUMENT', parsedDoc.error.issues.map((i) => `${i.path.join('.') || 'document'}: ${i.message}`).join('; '));
    }
    const { id, name, description, meta } = parsedDoc.data;
    const text = `${name}: ${description}`;
    const existing = docs.get(id);
    if (existing && existing.text === text) {
      existing.meta = meta;
      return { stored: existing, embed: false };
    }
    const slot = existing?.slot ?? allocate();
    const stored: StoredDoc = { id, name, description, meta, slot, text };
    docs.set(id, stored);
    slotDocs[slot] = stored;
    bm25.add(slot, name, description);
    deleteVector(slot);
    return { stored, embed: true };
  }

  const fusion: FusionContext = {
    bm25,
    vectors,
    slotDocs,
    get hnsw() {
      return hnsw;
    },
    dims,
    weights,
    floor,
    cosineFloor,
    bm25Norm: options.bm25Normalization ?? 'knee',
  };

  function searchWithVector(query: string, vector: ArrayLike<number> | null, opts?: SearchOptions): SearchHit[] {
    return fuseSearch(fusion, query, vector, opts);
  }

  function status(): SearchStatus {
    const base: Pick<SearchStatus, 'documents' | 'vectors' | 'pendingEmbeddings' | 'vectorIndex' | 'vectorIndexReason' | 'graphLoadedFromSnapshot'> = {
      documents: docs.size,
      vectors: vectors.count,
      pendingEmbeddings: queue.size,
      vectorIndex: hnsw ? 'hnsw' : 'flat',
    };
    if (hnswReason) base.vectorIndexReason = hnswReason;
    if (graphLoads > 0) base.graphLoadedFromSnapshot = true;
    if (!embedder) return { mode: 'keyword-only', reason: 'no embedding model configured', ...base };
    const s = embedder.status();
    if (s.state === 'ready') {
      return embedFailure ? { mode: 'hybrid', reason: embedFailure, model: s.modelId, ...base } : { mode: 'hybrid', model: s.modelId, ...base };
    }
    if (s.state === 'downloading') {
      const d = s.download;
      const done = d && d.total > 0 ? ` (${Math.floor((100 * d.loaded) / d.total)}% of ${(d.total / 1e6).toFixed(0)} MB)` : '';
      return {
        mode: 'keyword-only',
        reason: `embedding model is downloading${done}; search turns hybrid when it is ready`,
        model: s.modelId,
        ...(d ? { download: { ...d } } : {}),
        ...base,
      };
    }
    const reason = s.state === 'failed' ? (s.reason ?? 'embedding model failed to load') : 'embedding model is loading';
    return { mode: 'keyword-only', reason, model: s.modelId, ...base };
  }

  const index: SearchIndex = {
    get size() {
      return docs.size;
    },
    weights,
    floor,
    cosineFloor,
    upsert(doc) {
      const { stored, embed } = upsertSync(doc);
      if (!embedder) return Promise.resolve();
      if (!embed && !queue.has(stored.id)) return Promise.resolve();
      return schedule(stored.id, stored.text);
    },
    remove(id) {
      const doc = docs.get(id);
      if (!doc) return false;
      docs.delete(id);
      bm25.remove(doc.slot);
      deleteVector(doc.slot);
      slotDocs[doc.slot] = undefined;
      freeSlots.push(doc.slot);
      settle(id);
      return true;
    },
    get(id) {
      const d = docs.get(id);
      return d ? { id: d.id, name: d.name, description: d.description, meta: d.meta } : undefined;
    },
    has(id) {
      return docs.has(id);
    },
    ids() {
      return [...docs.keys()];
    },
    async search(query, opts) {
      return (await index.searchWithMode(query, opts)).hits;
    },
    async searchWithMode(query, opts) {
      limitOf(opts);
      let vector: Float32Array | null = null;
      if (embedder && query.trim().length > 0) {
        const s = await model();
        if (s.state === 'ready') {
          try {
            vector = (await embedder.embed([query], 'query'))[0] ?? null;
          } catch (err) {
            embedFailure = `query embedding failed: ${err instanceof Error ? err.message : String(err)}`;
          }
        }
      }
      const hits = searchWithVector(query, vector, opts);
      // Hybrid when a query vector met stored passage vectors; otherwise the keywords alone ranked.
      return { mode: vector !== null && vectors.count > 0 ? 'hybrid' : 'keyword', hits };
    },
    searchWithVector,
    setVector(id, vector) {
      const doc = docs.get(id);
      if (!doc) throw new DiscoveryError('INVALID_DOCUMENT', `no document with id ${id}`);
      storeVector(doc.slot, vector);
    },
    status,
    async idle() {
      while (draining || hnswLoading) await (draining ?? hnswLoading);
    },
    snapshot() {
      return encodeIndex({ bm25, vectors, docs, slotDocs, modelId: embedder?.modelId ?? null, dims });
    },
    snapshotWithGraph(snapshotOptions) {
      const bytes = index.snapshot();
      // Same synchronous step: the graph holds exactly the vectors in `bytes`.
      const graphSha256 = hnsw !== null ? (hnsw as HnswVectorIndex).save(snapshotOptions.graphPath) : null;
      return { bytes, graphSha256 };
    },
    async load(bytes, loadOptions) {
      const { snap, docs: parsedDocs, offsets, postingSlots, postingTfs, docLen, present, rows } = decodeIndex(bytes);
      // Everything is validated: replace the contents.
      for (const id of [...docs.keys()]) settle(id);
      docs.clear();
      slotDocs.length = 0;
      freeSlots.length = 0;
      for (let i = 0; i < snap.slots; i++) slotDocs.push(undefined);
      for (const d of parsedDocs) {
        docs.set(d.id, d);
        slotDocs[d.slot] = d;
      }
      for (let i = snap.slots - 1; i >= 0; i--) if (!slotDocs[i]) freeSlots.push(i);
      if (snap.analyzer === ANALYZER) {
        bm25.importState(
          { terms: snap.terms, offsets, slots: postingSlots, tfs: postingTfs, docLen },
          parsedDocs.map((d) => d.slot),
        );
      } else {
        // Terms made by another analyzer (an older release): index the documents again.
        bm25.clear();
        for (const d of parsedDocs) bm25.add(d.slot, d.name, d.description);
      }
      const reuse = snap.dims === dims && snap.stride === vectors.stride && (embedder ? snap.modelId === embedder.modelId : true);
      if (reuse) vectors.importRows(present, rows);
      else vectors.clear();
      pendingGraph = reuse && loadOptions?.graphPath && loadOptions.graphSha256 ? { path: loadOptions.graphPath, sha256: loadOptions.graphSha256 } : undefined;
      if (hnsw) restoreGraph(hnsw);
      if (embedder) {
        await Promise.all(parsedDocs.filter((d) => !vectors.has(d.slot)).map((d) => schedule(d.id, d.text)));
      }
    },
    vectorBytes() {
      return vectors.bytes;
    },
  };
  return index;
}
