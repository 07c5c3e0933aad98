import { currencyWords, documentTerms, LANGUAGES, plain, scriptOf, term, termLanguage, type Script } from './analyze.js';
import { words } from './tokenize.js';

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
    const seq = words(query)
      .map((w) => ({ ...w, key: w.bigram ? w.lower : plain(w.lower) }))
      .filter((w) => w.key.length > 0);
    const langsOf = (script: Script | null) =>
      script === null ? [] : LANGUAGES.filter((l) => l.script === script && this.languages.has(l.code)).map((l) => l.code);
    const live = (t: string) => {
      const id = this.termIds.get(t);
      return id !== undefined && this.postings[id]!.length > 0 ? id : undefined;
    };
    const index = new Map<string, number>();
    const planned: PlannedWord[] = [];
    const positions: number[] = [];
    seq.forEach((w, pos) => {
      const isLast = pos === seq.length - 1;
      const existing = index.get(w.key);
      if (existing !== undefined) {
        positions.push(existing);
        return;
      }
      const word: PlannedWord = { exact: [], fuzzy: [], splits: [] };
      const seen = new Set<number>();
      const exactTerms = new Set<string>();
      const addExact = (t: string) => {
        exactTerms.add(t);
        const id = live(t);
        if (id !== undefined && !seen.has(id)) {
          seen.add(id);
          word.exact.push(id);
        }
      };
      const addFuzzy = (t: string, weight: number) => {
        if (exactTerms.has(t)) return;
        const id = live(t);
        if (id !== undefined && !seen.has(id)) {
          seen.add(id);
          word.fuzzy.push({ id, weight });
        }
      };
      if (w.bigram) addExact(w.lower);
      else {
        const langs = langsOf(scriptOf(w.lower));
        addExact(w.key);
        for (const l of langs) addExact(term(l, w.lower));
        // A currency code read as its name in each language ("usd" -> dollar).
        if (w.key.length === 3) {
          for (const l of langs.length > 0 ? langs : ['en']) {
            for (const c of currencyWords(w.key, l)) addFuzzy(langs.length > 0 ? term(l, c) : plain(c), CURRENCY_WEIGHT);
          }
        }
        // Near stems: derivations a stemmer leaves apart (summary/summarize, convert/conversion).
        for (const t of exactTerms) {
          const colon = t.indexOf(':');
          if (colon < 0 || t.length - colon - 1 < NEAR_MIN_STEM) continue;
          for (const n of this.dictionary.withPrefix(t.slice(0, -1), NEAR_LIMIT, true)) {
            if (n.length <= t.length + 1 && word.fuzzy.length < FUZZY_LIMIT) addFuzzy(n, NEAR_WEIGHT);
          }
        }
        // The last word may be unfinished: complete it ("transl" -> translate).
        // Any other word of 5 letters or more may be the head of a compound ("Wetter" -> Wettervorhersage).
        const length = Array.from(w.key).length;
        if (isLast ? length >= PREFIX_MIN : length >= HEAD_MIN) {
          const prefixes = new Set<string>([w.key, ...exactTerms]);
          for (const l of langs) {
            // Completions of the stem already include those of the whole word when the stem is its prefix.
            const whole = `${l}:${w.key}`;
            if (!whole.startsWith(term(l, w.lower))) prefixes.add(whole);
          }
          for (const p of prefixes) {
            for (const n of this.dictionary.withPrefix(p, isLast ? PREFIX_LIMIT : HEAD_LIMIT, p.includes(':'))) {
              if (word.fuzzy.length < (isLast ? FUZZY_LIMIT : HEAD_LIMIT)) addFuzzy(n, isLast ? PREFIX_WEIGHT : HEAD_WEIGHT);
            }
          }
        }
        // A compound split in two words the same document holds ("webpage" ~ "web page"):
        // the right half is only stemmed where the left half is an indexed term.
        const chars = Array.from(w.lower);
        if (chars.length >= SPLIT_MIN && chars.length <= SPLIT_MAX) {
          for (let k = 3; k <= chars.length - 3 && word.splits.length < SPLIT_LIMIT; k++) {
            const left = chars.slice(0, k).join('');
            const right = chars.slice(k).join('');
            for (const l of [null, ...langs]) {
              const a = live(term(l, left));
              if (a === undefined) continue;
              const bb = live(term(l, right));
              if (bb !== undefined && a !== bb && word.splits.length < SPLIT_LIMIT) word.splits.push({ a, b: bb });
            }
          }
        }
      }
      index.set(w.key, planned.length);
      positions.push(planned.length);
      planned.push(word);
    });
    // Two adjacent words written as one in a document ("web page" ~ "webpage").
    const pairs: PlannedPair[] = [];
    for (let i = 0; i + 1 < seq.length; i++) {
      const x = seq[i]!;
      const y = seq[i + 1]!;
      if (x.bigram || y.bigram || positions[i] === positions[i + 1]) continue;
      const script = scriptOf(x.lower);
      if (script !== scriptOf(y.lower)) continue;
      const joined = x.lower + y.lower;
      const ids = new Set<number>();
      for (const t of [plain(joined), ...langsOf(script).map((l) => term(l, joined))]) {
        const id = live(t);
        if (id !== undefined) ids.add(id);
      }
      if (ids.size > 0) pairs.push({ left: positions[i]!, right: positions[i + 1]!, ids: [...ids] });
    }
    return { words: planned, pairs };
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

/** Weight of a match by completion of the last query word. */
const PREFIX_WEIGHT = 0.8;
/** Weight of a longer word starting with a query word that is not the last (a compound's head). */
const HEAD_WEIGHT = 0.5;
/** Shortest such word (characters), and most such longer words matched per query word. */
const HEAD_MIN = 5;
const HEAD_LIMIT = 8;
/** Shortest last word that is completed (characters). */
const PREFIX_MIN = 3;
/** Completions tried for the last word, per prefix (the word's plain form and its stem per language). */
const PREFIX_LIMIT = 16;
/** Weight of a near stem (one letter apart at the end: summari / summar, convert / convers). */
const NEAR_WEIGHT = 0.6;
/** Shortest stem that gets near stems. */
const NEAR_MIN_STEM = 5;
const NEAR_LIMIT = 8;
/** Most near stems, completions and currency names matched per query word (bounds the postings read). */
const FUZZY_LIMIT = 32;
/** Most compound splits matched per query word. */
const SPLIT_LIMIT = 8;
/** Weight of a compound matched as two words, or two words matched as one. */
const SPLIT_WEIGHT = 0.9;
const CONCAT_WEIGHT = 0.9;
/** Words tried as a compound (characters; halves of 3 or more). */
const SPLIT_MIN = 6;
const SPLIT_MAX = 20;

/** Weight of a currency code matched by its name. */
const CURRENCY_WEIGHT = 0.9;

interface PlannedWord {
  exact: number[];
  fuzzy: Array<{ id: number; weight: number }>;
  splits: Array<{ a: number; b: number }>;
}
interface PlannedPair {
  left: number;
  right: number;
  ids: number[];
}
interface QueryPlan {
  words: PlannedWord[];
  pairs: PlannedPair[];
}

/**
 * The index's terms in sorted order for prefix lookups. New terms wait in a
 * small unsorted list that is merged in when it grows.
 */
class TermDictionary {
  private sorted: string[] = [];
  /** Terms added since the last merge, kept sorted too (insertion into a short array). */
  private recent: string[] = [];

  add(term: string): void {
    this.recent.splice(lowerBound(this.recent, term), 0, term);
    if (this.recent.length > Math.max(512, Math.min(4096, this.sorted.length >> 4))) this.merge();
  }

  addAll(terms: Iterable<string>): void {
    const add = [...this.recent];
    for (const t of terms) add.push(t);
    this.recent = add.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    this.merge();
  }

  clear(): void {
    this.sorted = [];
    this.recent = [];
  }

  /** Up to `limit` terms starting with `prefix`; namespaced terms ("en:...") only when `namespaced`. */
  withPrefix(prefix: string, limit: number, namespaced: boolean): string[] {
    const out: string[] = [];
    for (const list of [this.sorted, this.recent]) {
      for (let i = lowerBound(list, prefix); i < list.length && out.length < limit; i++) {
        const t = list[i]!;
        if (!t.startsWith(prefix)) break;
        if (namespaced || !t.includes(':')) out.push(t);
      }
    }
    return out;
  }

  private merge(): void {
    if (this.recent.length === 0) return;
    const add = this.recent;
    const old = this.sorted;
    const out = new Array<string>(old.length + add.length);
    let i = 0;
    let j = 0;
    let k = 0;
    while (i < old.length && j < add.length) out[k++] = old[i]! <= add[j]! ? old[i++]! : add[j++]!;
    while (i < old.length) out[k++] = old[i++]!;
    while (j < add.length) out[k++] = add[j++]!;
    this.sorted = out;
    this.recent = [];
  }
}

/** The first index of the sorted `list` whose entry is not below `key`. */
function lowerBound(list: string[], key: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (list[mid]! < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
