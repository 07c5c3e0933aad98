import type { Bm25Index } from './bm25.js';
import { DiscoveryError } from './errors.js';
import type { HnswVectorIndex } from './hnsw.js';
import type { FusionWeights, SearchHit, SearchOptions, StoredDoc } from './search-types.js';
import type { FlatVectorIndex } from './vectors.js';

/** What a query reads from the index (search-index.ts); `hnsw` is the approximate graph once loaded. */
export interface FusionContext {
  readonly bm25: Bm25Index;
  readonly vectors: FlatVectorIndex;
  readonly slotDocs: ReadonlyArray<StoredDoc | undefined>;
  readonly hnsw: HnswVectorIndex | null;
  readonly dims: number;
  readonly weights: Readonly<FusionWeights>;
  readonly floor: number;
  readonly cosineFloor: number;
  /** How the keyword score is normalised: 'knee' (default) or the old 'cap' (kept for the bench's comparison). */
  readonly bm25Norm: Bm25Normalization;
}

export type Bm25Normalization = 'knee' | 'cap';

/** Below this, BM25' is the plain ratio (as under the old cap); above it the ratio saturates towards 1. */
export const BM25_KNEE = 0.8;

/**
 * BM25' from the ratio x = bm25(d) / (sum of the query tokens' IDF): x itself up
 * to the knee (0.8), then `knee + (1 - knee) * y / (y + 1 - knee)` with
 * y = x - knee, which continues with slope 1, is strictly increasing and stays
 * below 1 (x = 1 gives 0.9, x = 2.2, the most BM25 allows with k1 = 1.2, gives
 * 0.975). Monotonic in the raw score, so two strong matches keep their order;
 * the old `min(1, x)` gave both 1. See docs/search.md, "Fusion".
 */
export function kneeNorm(x: number): number {
  if (x <= BM25_KNEE) return x;
  const y = x - BM25_KNEE;
  const room = 1 - BM25_KNEE;
  return BM25_KNEE + (room * y) / (y + room);
}

function capNorm(x: number): number {
  return Math.min(1, x);
}

/** The `limit` search option, checked: an integer from 1 to 100, default 10. */
export function limitOf(opts: SearchOptions | undefined): number {
  const limit = opts?.limit ?? 10;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new DiscoveryError('INVALID_QUERY', `limit must be an integer from 1 to 100, got ${String(limit)}`);
  }
  return limit;
}

/**
 * Scores a query: the keyword matches, and with a query vector the vector side
 * (exact scan, or the HNSW graph's proposed neighbours), fused and ranked. See
 * docs/search.md for the formulas.
 */
export function fuseSearch(ctx: FusionContext, query: string, vector: ArrayLike<number> | null, opts?: SearchOptions): SearchHit[] {
  const { bm25, vectors, slotDocs, hnsw, dims, weights, floor, cosineFloor } = ctx;
  const norm = ctx.bm25Norm === 'cap' ? capNorm : kneeNorm;
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
        const bn = norm(raw * invIdeal);
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
          const bn = norm(b[slot]! * invIdeal);
          top.offer(slot, wB * bn, bn, 0);
        }
      }
    } else if (vector && vectors.count > 0) {
      cos = vectors.scanAll(vector).scores;
      for (let slot = 0; slot < cos.length; slot++) {
        const c = cos[slot]!;
        const raw = b[slot]!;
        if (raw === 0 && c <= cf) continue;
        const bn = norm(raw * invIdeal);
        const cn = c > cf ? Math.min(1, (c - cf) * cScale) : 0;
        top.offer(slot, wB * bn + wV * cn, bn, cn);
      }
      // Documents past the scanned range have no vector yet.
      for (const slot of kw.touched) {
        if (slot < cos.length) continue;
        const bn = norm(b[slot]! * invIdeal);
        top.offer(slot, wB * bn, bn, 0);
      }
    } else {
      for (const slot of kw.touched) {
        const bn = norm(b[slot]! * invIdeal);
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
