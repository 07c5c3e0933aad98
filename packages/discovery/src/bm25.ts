import { documentTerms, termLanguage } from './analyze.js';
import { CONCAT_WEIGHT, planQuery, SPLIT_WEIGHT, type QueryPlan } from './query-plan.js';
import { TermDictionary } from './term-dictionary.js';

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
  private readonly dictionary = new TermDictionary();
  private docTerms: Array<Int32Array | undefined> = [];
  private docLen = new Float32Array(1024);
  private scores = new Float32Array(1024);
  private acc = new Float32Array(1024);
  /** Languages with at least one term in the index (their stemmers are tried on queries). */
  private readonly languages = new Set<string>();
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
    const { tf } = documentTerms(name, description, NAME_WEIGHT);
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
        this.dictionary.add(token);
        const lang = termLanguage(token);
        if (lang !== null) this.languages.add(lang);
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
    this.dictionary.clear();
    this.languages.clear();
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
    this.dictionary.addAll(terms);
    for (const t of terms) {
      const lang = termLanguage(t);
      if (lang !== null) this.languages.add(lang);
    }
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
   * Scores every document matching a query word: by its stem in any language
   * of the word's script that the index holds, by a currency code's name, by a
   * near stem, by completion of the last word, and across spacing ("web page"
   * ~ "webpage"); see docs/search.md. Each query word contributes its best
   * match per document. Call `release` with the result before the next query
   * (it zeroes the dense score array).
   */
  query(query: string): Bm25Query {
    const plan = this.plan(query);
    const { k1, b } = this.params;
    const avg = this.docs > 0 ? this.totalLen / this.docs : 1;
    const docLen = this.docLen;
    const norm = (slot: number, f: number) => (f * (k1 + 1)) / (f + k1 * (1 - b + (b * docLen[slot]!) / avg));
    const scores = this.scores;
    const acc = this.acc;
    const touched: number[] = [];
    let ideal = 0;

    // Concatenations of adjacent words: the best normalised tf per document.
    const pairTfn = plan.pairs.map((pair) => {
      const m = new Map<number, number>();
      for (const id of pair.ids) {
        const p = this.postings[id]!;
        for (let j = 0; j < p.length; j++) {
          const slot = p.slots[j]!;
          const n = norm(slot, p.tfs[j]!);
          if (n > (m.get(slot) ?? 0)) m.set(slot, n);
        }
      }
      return m;
    });
    const watch = new Set<number>();
    for (const m of pairTfn) for (const slot of m.keys()) watch.add(slot);
    const wordScores = plan.words.map(() => new Map<number, number>());
    const wordIdf: number[] = [];

    const wordTouched: number[] = [];
    const put = (slot: number, s: number) => {
      if (acc[slot] === 0) wordTouched.push(slot);
      if (s > acc[slot]!) acc[slot] = s;
    };
    // Best score per document of one posting list scaled by `weight` (the hot loop, inlined).
    const c0 = k1 + 1;
    const c1 = k1 * (1 - b);
    const c2 = (k1 * b) / avg;
    const scan = (p: Posting, weight: number) => {
      const { slots, tfs, length } = p;
      for (let j = 0; j < length; j++) {
        const slot = slots[j]!;
        const f = tfs[j]!;
        const s = (weight * f * c0) / (f + c1 + c2 * docLen[slot]!);
        const had = acc[slot]!;
        if (had === 0) wordTouched.push(slot);
        if (s > had) acc[slot] = s;
      }
    };
    plan.words.forEach((word, wi) => {
      let exactDf = 0;
      for (const id of word.exact) exactDf += this.postings[id]!.length;
      let idfW: number;
      if (exactDf > 0) idfW = this.idf(exactDf);
      else {
        let best = -1;
        for (const v of word.fuzzy) best = Math.max(best, this.idf(this.postings[v.id]!.length));
        for (const sp of word.splits) best = Math.max(best, this.idf(Math.max(this.postings[sp.a]!.length, this.postings[sp.b]!.length)));
        idfW = best >= 0 ? best : this.idf(0);
      }
      wordIdf.push(idfW);
      ideal += idfW;
      for (const id of word.exact) scan(this.postings[id]!, idfW);
      for (const v of word.fuzzy) {
        const p = this.postings[v.id]!;
        scan(p, v.weight * Math.min(idfW, this.idf(p.length)));
      }
      for (const sp of word.splits) {
        const pa = this.postings[sp.a]!;
        const pb = this.postings[sp.b]!;
        const first = new Map<number, number>();
        for (let j = 0; j < pa.length; j++) first.set(pa.slots[j]!, norm(pa.slots[j]!, pa.tfs[j]!));
        for (let j = 0; j < pb.length; j++) {
          const slot = pb.slots[j]!;
          const na = first.get(slot);
          if (na !== undefined) put(slot, SPLIT_WEIGHT * idfW * Math.min(na, norm(slot, pb.tfs[j]!)));
        }
      }
      const watching = watch.size > 0;
      for (const slot of wordTouched) {
        const s = acc[slot]!;
        acc[slot] = 0;
        if (scores[slot] === 0) touched.push(slot);
        scores[slot]! += s;
        if (watching && watch.has(slot)) wordScores[wi]!.set(slot, s);
      }
      wordTouched.length = 0;
    });

    // A concatenation counts as both words when that beats their separate matches.
    plan.pairs.forEach((pair, pi) => {
      const credit = CONCAT_WEIGHT * (wordIdf[pair.left]! + wordIdf[pair.right]!);
      for (const [slot, n] of pairTfn[pi]!) {
        const have = (wordScores[pair.left]!.get(slot) ?? 0) + (wordScores[pair.right]!.get(slot) ?? 0);
        const extra = credit * n - have;
        if (extra <= 0) continue;
        if (scores[slot] === 0) touched.push(slot);
        scores[slot]! += extra;
        wordScores[pair.left]!.set(slot, (wordScores[pair.left]!.get(slot) ?? 0) + extra);
      }
    });
    return { scores, touched: Int32Array.from(touched), ideal };
  }

  /** What each query word matches, as term ids (see `query`). */
  private plan(query: string): QueryPlan {
    return planQuery(query, {
      live: (t) => {
        const id = this.termIds.get(t);
        return id !== undefined && this.postings[id]!.length > 0 ? id : undefined;
      },
      languages: this.languages,
      dictionary: this.dictionary,
    });
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
    this.acc = new Float32Array(next);
  }
}
