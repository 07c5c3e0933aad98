import type { Embedder, ModelDownloadProgress } from './embedder-types.js';
import type { HnswLoader } from './hnsw.js';

/** The public types of the hybrid search index (createSearchIndex in search-index.ts). */

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
  /**
   * How the keyword score becomes BM25': 'knee' (default; monotonic, saturating
   * above 0.8, see docs/search.md) or 'cap', the earlier `min(1, x)`, kept so
   * the bench can print both.
   */
  bm25Normalization?: 'knee' | 'cap';
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
  /** Normalised keyword part: the ratio raw BM25 / sum of the query tokens' IDF, saturating above 0.8 (docs/search.md, "Fusion"). */
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
  /** While the model downloads (mode `keyword-only` until it is ready): bytes fetched and in all. */
  download?: ModelDownloadProgress;
}

/** Which ranking served one search: `hybrid` (keywords and vectors) or `keyword` (BM25 alone). */
export type SearchMode = 'hybrid' | 'keyword';

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
  /** `search`, and which ranking served it: `hybrid`, or `keyword` while no model is available (loading, downloading, failed, none). */
  searchWithMode(query: string, options?: SearchOptions): Promise<{ mode: SearchMode; hits: SearchHit[] }>;
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

/** A document as the index holds it: its slot in the keyword and vector indexes, and the text embedded. */
export interface StoredDoc extends ServiceDocument {
  slot: number;
  text: string;
}
