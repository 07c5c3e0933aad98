import { currencyWords, LANGUAGES, plain, scriptOf, term, type Script } from './analyze.js';
import type { TermDictionary } from './term-dictionary.js';
import { words } from './tokenize.js';

/** What a query is planned against: the terms of a BM25 index. */
export interface IndexVocabulary {
  /** The id of `term` when some document holds it, else undefined. */
  live(term: string): number | undefined;
  /** Languages with at least one term in the index (their stemmers are tried on queries). */
  languages: ReadonlySet<string>;
  dictionary: TermDictionary;
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
export const SPLIT_WEIGHT = 0.9;
export const CONCAT_WEIGHT = 0.9;
/** Words tried as a compound (characters; halves of 3 or more). */
const SPLIT_MIN = 6;
const SPLIT_MAX = 20;

/** Weight of a currency code matched by its name. */
const CURRENCY_WEIGHT = 0.9;

export interface PlannedWord {
  exact: number[];
  fuzzy: Array<{ id: number; weight: number }>;
  splits: Array<{ a: number; b: number }>;
}
export interface PlannedPair {
  left: number;
  right: number;
  ids: number[];
}
export interface QueryPlan {
  words: PlannedWord[];
  pairs: PlannedPair[];
}

/** What each query word matches, as term ids of the index behind `vocab` (see `Bm25Index.query`). */
export function planQuery(query: string, vocab: IndexVocabulary): QueryPlan {
  const seq = words(query)
    .map((w) => ({ ...w, key: w.bigram ? w.lower : plain(w.lower) }))
    .filter((w) => w.key.length > 0);
  const langsOf = (script: Script | null) =>
    script === null ? [] : LANGUAGES.filter((l) => l.script === script && vocab.languages.has(l.code)).map((l) => l.code);
  const live = (t: string) => vocab.live(t);
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
        for (const n of vocab.dictionary.withPrefix(t.slice(0, -1), NEAR_LIMIT, true)) {
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
          for (const n of vocab.dictionary.withPrefix(p, isLast ? PREFIX_LIMIT : HEAD_LIMIT, p.includes(':'))) {
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
