import { tokenize } from './tokenize.js';

/** Weight of a token in the name relative to one in the description. */
export const NAME_WEIGHT = 2;

interface Posting {
  slots: Int32Array;
  tfs: Float32Array;
  length: number;
}

export interface Bm25Params {
  k1: number;
  b: number;
}

export interface Bm25State {
  terms: string[];
  /** Postings of term i are entries offsets[i] .. offsets[i+1]-1. */
  offsets: Int32Array;
  slots: Int32Array;
  tfs: Float32Array;
  docLen: Float32Array;
}

export interface Bm25Query {
  /** Raw BM25 score per slot (a dense view valid until the next query), non-zero only in `touched`. */
  scores: Float32Array;
  /** Slots with a non-zero score. */
  touched: Int32Array;
  /** The score of a document of average length holding every query token once: sum of the query tokens' IDF. */
  ideal: number;
}

/**
 * An incremental BM25 inverted index over (name, description) with dense
 * integer slots chosen by the caller. Name tokens count NAME_WEIGHT times
 * (a simple BM25F); document length is the weighted token count.
 */
export class Bm25Index {
  readonly params: Bm25Params;
  private readonly termIds = new Map<string, number>();
  private readonly postings: Posting[] = [];
  private docTerms: Array<Int32Array | undefined> = [];
  private docLen = new Float32Array(1024);
  private scores = new Float32Array(1024);
  private totalLen = 0;
  private docs = 0;

  constructor(params: Partial<Bm25Params> = {}) {
    this.params = { k1: params.k1 ?? 1.2, b: params.b ?? 0.75 };
  }

  get count(): number {
    return this.docs;
  }

  get vocabulary(): number {
    return this.termIds.size;
  }

  has(slot: number): boolean {
    return this.docTerms[slot] !== undefined;
  }

  add(slot: number, name: string, description: string): void {
    if (this.has(slot)) this.remove(slot);
    const tf = new Map<string, number>();
    for (const t of tokenize(name)) tf.set(t, (tf.get(t) ?? 0) + NAME_WEIGHT);
    for (const t of tokenize(description)) tf.set(t, (tf.get(t) ?? 0) + 1);
    this.grow(slot + 1);
    const terms = new Int32Array(tf.size);
    let len = 0;
    let i = 0;
    for (const [token, f] of tf) {
      let id = this.termIds.get(token);
      if (id === undefined) {
        id = this.postings.length;
        this.termIds.set(token, id);
        this.postings.push({ slots: new Int32Array(2), tfs: new Float32Array(2), length: 0 });
      }
      const p = this.postings[id]!;
      if (p.length === p.slots.length) {
        const slots = new Int32Array(p.length * 2);
        slots.set(p.slots);
        const tfs = new Float32Array(p.length * 2);
        tfs.set(p.tfs);
        p.slots = slots;
        p.tfs = tfs;
      }
      p.slots[p.length] = slot;
      p.tfs[p.length] = f;
      p.length++;
      terms[i++] = id;
      len += f;
    }
    this.docTerms[slot] = terms;
    this.docLen[slot] = len;
    this.totalLen += len;
    this.docs++;
  }

  remove(slot: number): void {
    const terms = this.docTerms[slot];
    if (terms === undefined) return;
    for (const id of terms) {
      const p = this.postings[id]!;
      // Postings are unordered: swap the last entry into the hole.
      for (let j = 0; j < p.length; j++) {
        if (p.slots[j] === slot) {
          p.length--;
          p.slots[j] = p.slots[p.length]!;
          p.tfs[j] = p.tfs[p.length]!;
          break;
        }
      }
    }
    this.totalLen -= this.docLen[slot]!;
    this.docLen[slot] = 0;
    this.docTerms[slot] = undefined;
    this.docs--;
  }

  clear(): void {
    this.termIds.clear();
    this.postings.length = 0;
    this.docTerms = [];
    this.docLen.fill(0);
    this.totalLen = 0;
    this.docs = 0;
  }

  /** The postings as flat arrays (for snapshots). */
  exportState(): Bm25State {
    const terms = [...this.termIds.keys()];
    const offsets = new Int32Array(terms.length + 1);
    let total = 0;
    terms.forEach((_t, id) => {
      offsets[id] = total;
      total += this.postings[id]!.length;
    });
    offsets[terms.length] = total;
    const slots = new Int32Array(total);
    const tfs = new Float32Array(total);
    this.postings.forEach((p, id) => {
      slots.set(p.slots.subarray(0, p.length), offsets[id]!);
      tfs.set(p.tfs.subarray(0, p.length), offsets[id]!);
    });
    return { terms, offsets, slots, tfs, docLen: this.docLen.slice(0, this.docTerms.length) };
  }

  /** Replaces the contents with exported postings; `live` lists the slots holding a document. */
  importState(state: Bm25State, live: Iterable<number>): void {
    this.clear();
    const { terms, offsets, slots, tfs, docLen } = state;
    this.grow(docLen.length);
    this.docLen.set(docLen);
    const counts = new Int32Array(docLen.length);
    for (let j = 0; j < slots.length; j++) counts[slots[j]!]!++;
    this.docTerms = new Array<Int32Array | undefined>(docLen.length);
    for (const slot of live) {
      this.docTerms[slot] = new Int32Array(counts[slot]!);
      this.totalLen += docLen[slot]!;
      this.docs++;
    }
    const fill = new Int32Array(docLen.length);
    terms.forEach((term, id) => {
      this.termIds.set(term, id);
      const from = offsets[id]!;
      const to = offsets[id + 1]!;
      const n = Math.max(2, to - from);
      const p: Posting = { slots: new Int32Array(n), tfs: new Float32Array(n), length: to - from };
      p.slots.set(slots.subarray(from, to));
      p.tfs.set(tfs.subarray(from, to));
      this.postings.push(p);
      for (let j = from; j < to; j++) {
        const slot = slots[j]!;
        this.docTerms[slot]![fill[slot]!++] = id;
      }
    });
  }

  /** IDF with the usual +1 inside the log, so it is never negative; unseen tokens get the largest IDF. */
  idf(df: number): number {
    return Math.log(1 + (this.docs - df + 0.5) / (df + 0.5));
  }

  /**
   * Scores every document sharing a token with `query`. Call `release` with the
   * result before the next query (it zeroes the dense score array).
   */
  query(query: string): Bm25Query {
    const tokens = [...new Set(tokenize(query))];
    const { k1, b } = this.params;
    const avg = this.docs > 0 ? this.totalLen / this.docs : 1;
    const touched: number[] = [];
    const scores = this.scores;
    let ideal = 0;
    for (const token of tokens) {
      const id = this.termIds.get(token);
      const p = id === undefined ? undefined : this.postings[id];
      const df = p?.length ?? 0;
      const idf = this.idf(df);
      ideal += idf;
      if (!p || df === 0) continue;
      for (let j = 0; j < p.length; j++) {
        const slot = p.slots[j]!;
        const f = p.tfs[j]!;
        const s = (idf * f * (k1 + 1)) / (f + k1 * (1 - b + (b * this.docLen[slot]!) / avg));
        if (scores[slot] === 0) touched.push(slot);
        scores[slot]! += s;
      }
    }
    return { scores, touched: Int32Array.from(touched), ideal };
  }

  release(q: Bm25Query): void {
    for (const slot of q.touched) q.scores[slot] = 0;
  }

  private grow(size: number): void {
    if (size <= this.docLen.length) return;
    let next = this.docLen.length;
    while (next < size) next *= 2;
    const len = new Float32Array(next);
    len.set(this.docLen);
    this.docLen = len;
    this.scores = new Float32Array(next);
  }
}
