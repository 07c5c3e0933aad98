import { z } from 'zod';
import { ANALYZER } from './analyze.js';
import { Bm25Index } from './bm25.js';
import type { Embedder } from './embedder-types.js';
import { DiscoveryError } from './errors.js';
import { decodeSnapshot, encodeSnapshot } from './snapshot.js';
import { HnswVectorIndex, loadUsearch, type HnswLoader } from './hnsw.js';
import { FlatVectorIndex } from './vectors.js';

export interface ServiceDocument {
  id: string;
  name: string;
  description: string;
  meta?: unknown;
}

export interface FusionWeights {
  bm25: number;
  vector: number;
}

export interface SearchIndexOptions {
  /** Computes passage and query vectors. Without one, search is keyword-only. */
  embedder?: Embedder;
  /** Fusion weights; default { bm25: 0.6, vector: 0.4 }. Must be >= 0 and sum to 1. */
  weights?: FusionWeights;
  /** Minimum fused score a result needs (default 0.05). */
  floor?: number;
  /** Cosine at or below which the vector side contributes nothing (default 0.8, tuned for e5). */
  cosineFloor?: number;
  /** Vector dimensions when no embedder is given but vectors are supplied directly. */
  dims?: number;
  /** Texts embedded per model call (default 16). */
  batchSize?: number;
  /**
   * 'flat' (default): exact scan of every vector. 'hnsw': an approximate HNSW
   * graph (the optional `usearch` package) proposes the nearest neighbours and
   * their exact cosines are fused; falls back to 'flat' when usearch cannot load.
   */
  vectorIndex?: 'flat' | 'hnsw';
  /** How 'hnsw' loads usearch (default: `import('usearch')`). */
  hnswLoader?: HnswLoader;
}

export interface SnapshotOptions {
  /** File holding the HNSW graph saved with the snapshot. */
  graphPath?: string;
  /** For `load`: the graph file's SHA-256 that `snapshotWithGraph` returned; a file with another digest is not read. */
  graphSha256?: string;
}

export interface SearchOptions {
  /** Results returned, 1..100 (default 10). */
  limit?: number;
}

export interface SearchHit {
  id: string;
  /** weights.bm25 * bm25 + weights.vector * cosine, in [0, 1]. */
  score: number;
  /** Normalised keyword part, min(1, raw BM25 / sum of the query tokens' IDF). */
  bm25: number;
  /** Normalised vector part, clamp((cos - cosineFloor) / (1 - cosineFloor), 0, 1). */
  cosine: number;
  raw: { bm25: number; cosine: number | null };
  name: string;
  description: string;
  meta: unknown;
}

export interface SearchStatus {
  mode: 'hybrid' | 'keyword-only';
  reason?: string;
  model?: string;
  documents: number;
  vectors: number;
  pendingEmbeddings: number;
  /** The vector index in use: 'hnsw' once usearch is loaded, else 'flat'. */
  vectorIndex: 'flat' | 'hnsw';
  /** Why 'hnsw' was asked for but 'flat' is in use. */
  vectorIndexReason?: string;
  /** The HNSW graph in use was read from a snapshot's graph file (not rebuilt). */
  graphLoadedFromSnapshot?: boolean;
}

export interface SearchIndex {
  readonly size: number;
  readonly weights: Readonly<FusionWeights>;
  readonly floor: number;
  readonly cosineFloor: number;
  /**
   * Adds or replaces a document. It is keyword-searchable when this returns;
   * the promise settles once its vector is stored (at once when the text did
   * not change, or when no model is available).
   */
  upsert(doc: ServiceDocument): Promise<void>;
  /** Removes a document; true when it existed. */
  remove(id: string): boolean;
  get(id: string): ServiceDocument | undefined;
  has(id: string): boolean;
  ids(): string[];
  /** Hybrid search (keyword-only while no model is available). */
  search(query: string, options?: SearchOptions): Promise<SearchHit[]>;
  /** Search with a query vector computed elsewhere (null for keyword-only). */
  searchWithVector(query: string, vector: ArrayLike<number> | null, options?: SearchOptions): SearchHit[];
  /** Stores a passage vector directly (used by snapshots, benches and callers with their own embedder). */
  setVector(id: string, vector: ArrayLike<number>): void;
  status(): SearchStatus;
  /** Resolves when no embedding is queued. */
  idle(): Promise<void>;
  /** The documents, keyword index and vectors as bytes for `load`. */
  snapshot(): Uint8Array;
  /**
   * `snapshot()`, and with `graphPath` and an active HNSW graph, the graph
   * written to that file in the same synchronous step (so it holds exactly the
   * vectors in `bytes`); `graphSha256` is its digest (for `load`), null when no graph was written.
   */
  snapshotWithGraph(options: { graphPath: string }): { bytes: Uint8Array; graphSha256: string | null };
  /**
   * Replaces the contents with a snapshot; vectors from another model are
   * recomputed. With `graphPath` (a graph saved with that snapshot) the HNSW
   * graph is read from the file instead of rebuilt; a missing or mismatched
   * file falls back to the rebuild.
   */
  load(bytes: Uint8Array, options?: SnapshotOptions): Promise<void>;
  /** Bytes held by the index's typed arrays (postings excluded; see bench for process memory). */
  vectorBytes(): number;
}

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
});

interface StoredDoc extends ServiceDocument {
  slot: number;
  text: string;
}

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

  if (embedder) void embedder.load();

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
    const status = await embedder.load();
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

  function limitOf(opts: SearchOptions | undefined): number {
    const limit = opts?.limit ?? 10;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw new DiscoveryError('INVALID_QUERY', `limit must be an integer from 1 to 100, got ${String(limit)}`);
    }
    return limit;
  }

  function searchWithVector(query: string, vector: ArrayLike<number> | null, opts?: SearchOptions): SearchHit[] {
    if (typeof query !== 'string') throw new DiscoveryError('INVALID_QUERY', 'query must be a string');
    if (query.length > 1024) throw new DiscoveryError('INVALID_QUERY', 'query is longer than 1024 characters');
    const limit = limitOf(opts);
    const top = new TopK(limit, (slot) => slotDocs[slot]!.id);
    const kw = bm25.query(query);
    try {
      const invIdeal = kw.ideal > 0 ? 1 / kw.ideal : 0;
      const wB = weights.bm25;
      const wV = weights.vector;
      const cf = cosineFloor;
      const cScale = 1 / (1 - cf);
      const b = kw.scores;
      let cos: Float32Array | null = null;
      let candidateCos: Map<number, number> | null = null;
      let unitQuery: Float32Array | null = null;
      if (vector && vectors.count > 0 && hnsw) {
        // Approximate: the union of the keyword matches and the nearest
        // neighbours the graph proposes, each scored with its exact cosine.
        unitQuery = unitVector(vector, dims);
        const found = new Map<number, number>();
        candidateCos = found;
        let kth = -Infinity;
        if (unitQuery) {
          const proposed = hnsw.search(unitQuery, Math.max(HNSW_MIN_CANDIDATES, HNSW_CANDIDATES_PER_RESULT * limit));
          kth = Infinity;
          for (const slot of proposed) {
            const c = vectors.cosine(slot, unitQuery);
            found.set(slot, c);
            if (c < kth) kth = c;
          }
        }
        const score = (slot: number, c: number) => {
          const raw = b[slot]!;
          if (raw === 0 && c <= cf) return;
          const bn = Math.min(1, raw * invIdeal);
          const cn = c > cf ? Math.min(1, (c - cf) * cScale) : 0;
          top.offer(slot, wB * bn + wV * cn, bn, cn);
        };
        for (const [slot, c] of found) score(slot, c);
        // Every other vector is at most as close as the farthest proposed one. When
        // that is at or below the cosine floor, the other keyword matches get no
        // vector part and their exact cosine is only needed for the hits returned.
        const exactRest = unitQuery !== null && kth > cf;
        for (const slot of kw.touched) {
          if (found.has(slot)) continue;
          if (exactRest && vectors.has(slot)) {
            const c = vectors.cosine(slot, unitQuery!);
            found.set(slot, c);
            score(slot, c);
          } else {
            const bn = Math.min(1, b[slot]! * invIdeal);
            top.offer(slot, wB * bn, bn, 0);
          }
        }
      } else if (vector && vectors.count > 0) {
        cos = vectors.scanAll(vector).scores;
        for (let slot = 0; slot < cos.length; slot++) {
          const c = cos[slot]!;
          const raw = b[slot]!;
          if (raw === 0 && c <= cf) continue;
          const bn = Math.min(1, raw * invIdeal);
          const cn = c > cf ? Math.min(1, (c - cf) * cScale) : 0;
          top.offer(slot, wB * bn + wV * cn, bn, cn);
        }
        // Documents past the scanned range have no vector yet.
        for (const slot of kw.touched) {
          if (slot < cos.length) continue;
          const bn = Math.min(1, b[slot]! * invIdeal);
          top.offer(slot, wB * bn, bn, 0);
        }
      } else {
        for (const slot of kw.touched) {
          const bn = Math.min(1, b[slot]! * invIdeal);
          top.offer(slot, wB * bn, bn, 0);
        }
      }
      const hits: SearchHit[] = [];
      for (const e of top.sorted()) {
        if (e.score < floor || e.score <= 0) continue;
        const doc = slotDocs[e.slot]!;
        hits.push({
          id: doc.id,
          score: e.score,
          bm25: e.bm25,
          cosine: e.cosine,
          raw: {
            bm25: b[e.slot]!,
            cosine: candidateCos
              ? (candidateCos.get(e.slot) ?? (vectors.has(e.slot) ? (unitQuery ? vectors.cosine(e.slot, unitQuery) : 0) : null))
              : cos && vectors.has(e.slot)
                ? cos[e.slot]!
                : null,
          },
          name: doc.name,
          description: doc.description,
          meta: doc.meta,
        });
      }
      hits.sort((x, y) => y.score - x.score || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
      return hits;
    } finally {
      bm25.release(kw);
    }
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
      return embedFailure
        ? { mode: 'hybrid', reason: embedFailure, model: s.modelId, ...base }
        : { mode: 'hybrid', model: s.modelId, ...base };
    }
    const reason =
      s.state === 'failed' ? (s.reason ?? 'embedding model failed to load') : 'embedding model is loading';
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
      limitOf(opts);
      let vector: Float32Array | null = null;
      if (embedder && query.trim().length > 0) {
        const s = await embedder.load();
        if (s.state === 'ready') {
          try {
            vector = (await embedder.embed([query], 'query'))[0] ?? null;
          } catch (err) {
            embedFailure = `query embedding failed: ${err instanceof Error ? err.message : String(err)}`;
          }
        }
      }
      return searchWithVector(query, vector, opts);
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
      const slots = slotDocs.length;
      const kw = bm25.exportState();
      const docLen = new Float32Array(slots);
      docLen.set(kw.docLen.subarray(0, slots));
      const { present, rows } = vectors.exportRows(slots);
      return encodeSnapshot({
        modelId: embedder?.modelId ?? null,
        dims,
        stride: vectors.stride,
        slots,
        analyzer: ANALYZER,
        docs: [...docs.values()].map((d) => [d.id, d.name, d.description, d.meta ?? null, d.slot]),
        terms: kw.terms,
        arrays: { offsets: kw.offsets, postingSlots: kw.slots, postingTfs: kw.tfs, docLen, present, rows },
      });
    },
    snapshotWithGraph(snapshotOptions) {
      const bytes = index.snapshot();
      // Same synchronous step: the graph holds exactly the vectors in `bytes`.
      const graphSha256 = hnsw !== null ? (hnsw as HnswVectorIndex).save(snapshotOptions.graphPath) : null;
      return { bytes, graphSha256 };
    },
    async load(bytes, loadOptions) {
      const snap = decodeSnapshot(bytes);
      const a = snap.arrays;
      const need = { offsets: Int32Array, postingSlots: Int32Array, postingTfs: Float32Array, docLen: Float32Array, present: Uint8Array, rows: Float32Array };
      for (const [name, Ctor] of Object.entries(need)) {
        if (!(a[name] instanceof Ctor)) throw new DiscoveryError('BAD_SNAPSHOT', `not a discovery snapshot: section ${name} is missing`);
      }
      const offsets = a['offsets'] as Int32Array;
      const postingSlots = a['postingSlots'] as Int32Array;
      const docLen = a['docLen'] as Float32Array;
      if (offsets.length !== snap.terms.length + 1 || offsets[snap.terms.length] !== postingSlots.length || docLen.length !== snap.slots) {
        throw new DiscoveryError('BAD_SNAPSHOT', 'not a discovery snapshot: keyword index sections disagree');
      }
      for (const slot of postingSlots) {
        if (slot < 0 || slot >= snap.slots) throw new DiscoveryError('BAD_SNAPSHOT', 'not a discovery snapshot: posting outside the slot range');
      }
      const seenSlots = new Set<number>();
      const seenIds = new Set<string>();
      const parsedDocs = snap.docs.map(([id, name, description, meta, slot]) => {
        if (seenSlots.has(slot) || seenIds.has(id)) throw new DiscoveryError('BAD_SNAPSHOT', `not a discovery snapshot: document ${id} is listed twice`);
        seenSlots.add(slot);
        seenIds.add(id);
        // Fields were checked by decodeSnapshot.
        const doc: StoredDoc = { id, name, description, slot, text: `${name}: ${description}` };
        if (meta !== null) doc.meta = meta;
        return doc;
      });
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
          { terms: snap.terms, offsets, slots: postingSlots, tfs: a['postingTfs'] as Float32Array, docLen },
          parsedDocs.map((d) => d.slot),
        );
      } else {
        // Terms made by another analyzer (an older release): index the documents again.
        bm25.clear();
        for (const d of parsedDocs) bm25.add(d.slot, d.name, d.description);
      }
      const reuse = snap.dims === dims && snap.stride === vectors.stride && (embedder ? snap.modelId === embedder.modelId : true);
      if (reuse) vectors.importRows(a['present'] as Uint8Array, a['rows'] as Float32Array);
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

/** Approximate neighbours fetched per query: max(100, 4 x limit). */
const HNSW_MIN_CANDIDATES = 100;
const HNSW_CANDIDATES_PER_RESULT = 4;

/** `vector` scaled to unit length, or null for a zero or non-finite vector (it matches nothing). */
function unitVector(vector: ArrayLike<number>, dims: number): Float32Array | null {
  if (vector.length !== dims) {
    throw new DiscoveryError('DIMENSION_MISMATCH', `expected a ${dims}-dimension query vector, got ${vector.length}`);
  }
  let norm = 0;
  for (let i = 0; i < dims; i++) norm += vector[i]! * vector[i]!;
  if (!(norm > 0) || !Number.isFinite(norm)) return null;
  const inv = 1 / Math.sqrt(norm);
  const out = new Float32Array(dims);
  for (let i = 0; i < dims; i++) out[i] = vector[i]! * inv;
  return out;
}

/**
 * A bounded min-heap keeping the `k` best (score, slot) entries; equal scores
 * rank by document id, so the kept set does not depend on the order of offers.
 */
class TopK {
  private readonly slots: Int32Array;
  private readonly scores: Float64Array;
  private readonly b: Float64Array;
  private readonly c: Float64Array;
  private n = 0;
  constructor(
    private readonly k: number,
    private readonly idOf: (slot: number) => string,
  ) {
    this.slots = new Int32Array(k);
    this.scores = new Float64Array(k);
    this.b = new Float64Array(k);
    this.c = new Float64Array(k);
  }
  offer(slot: number, score: number, bm25: number, cosine: number): void {
    if (this.n < this.k) {
      let i = this.n++;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.below(slot, score, this.slots[p]!, this.scores[p]!)) break;
        this.move(p, i);
        i = p;
      }
      this.put(i, slot, score, bm25, cosine);
      return;
    }
    if (this.below(slot, score, this.slots[0]!, this.scores[0]!)) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= this.n) break;
      const r = l + 1;
      const m = r < this.n && this.below(this.slots[r]!, this.scores[r]!, this.slots[l]!, this.scores[l]!) ? r : l;
      if (!this.below(this.slots[m]!, this.scores[m]!, slot, score)) break;
      this.move(m, i);
      i = m;
    }
    this.put(i, slot, score, bm25, cosine);
  }
  sorted(): Array<{ slot: number; score: number; bm25: number; cosine: number }> {
    const out = [];
    for (let i = 0; i < this.n; i++) out.push({ slot: this.slots[i]!, score: this.scores[i]!, bm25: this.b[i]!, cosine: this.c[i]! });
    return out.sort((x, y) => y.score - x.score);
  }
  /** Whether entry a ranks below entry b: a lower score, or the same score and a later id. */
  private below(slotA: number, scoreA: number, slotB: number, scoreB: number): boolean {
    if (scoreA !== scoreB) return scoreA < scoreB;
    return this.idOf(slotA) > this.idOf(slotB);
  }
  private move(from: number, to: number): void {
    this.slots[to] = this.slots[from]!;
    this.scores[to] = this.scores[from]!;
    this.b[to] = this.b[from]!;
    this.c[to] = this.c[from]!;
  }
  private put(i: number, slot: number, score: number, bm25: number, cosine: number): void {
    this.slots[i] = slot;
    this.scores[i] = score;
    this.b[i] = bm25;
    this.c[i] = cosine;
  }
}
