/**
 * Language-aware analysis for the keyword index: which language a document is
 * written in, Snowball stems per language, and ISO 4217 currency codes read as
 * their names. See docs/search.md ("Stemming and tolerance").
 *
 * Index terms are namespaced by the document's language: the English document
 * word "passwords" is the term `en:password`, the German "Passwörter" is
 * `de:passwort`. A document whose language is not detected (too short, a
 * script without a stemmer) and every character bigram keep the plain folded
 * token. A query is not assigned one language (one to three words say too
 * little): each query word is stemmed with every stemmer of its script that
 * some indexed document uses, and `en:` terms only meet English documents.
 */
import { data as trigramModels } from 'franc-min/data.js';
import { stemmer as arabic } from '@orama/stemmers/arabic';
import { stemmer as bulgarian } from '@orama/stemmers/bulgarian';
import { stemmer as dutch } from '@orama/stemmers/dutch';
import { stemmer as english } from '@orama/stemmers/english';
import { stemmer as french } from '@orama/stemmers/french';
import { stemmer as german } from '@orama/stemmers/german';
import { stemmer as greek } from '@orama/stemmers/greek';
import { stemmer as hungarian } from '@orama/stemmers/hungarian';
import { stemmer as indonesian } from '@orama/stemmers/indonesian';
import { stemmer as italian } from '@orama/stemmers/italian';
import { stemmer as portuguese } from '@orama/stemmers/portuguese';
import { stemmer as romanian } from '@orama/stemmers/romanian';
import { stemmer as russian } from '@orama/stemmers/russian';
import { stemmer as spanish } from '@orama/stemmers/spanish';
import { stemmer as swedish } from '@orama/stemmers/swedish';
import { stemmer as turkish } from '@orama/stemmers/turkish';
import { stemmer as ukrainian } from '@orama/stemmers/ukrainian';
import { fold, words, type Word } from './tokenize.js';

/** Names how index terms are made; stored in snapshots, whose terms are rebuilt when it differs. */
export const ANALYZER = 'snowball-1';

export type Script = 'latin' | 'cyrillic' | 'greek' | 'arabic';

interface Language {
  code: string;
  /** franc-min's ISO 639-3 code. */
  franc: string;
  script: Script;
  stem: (word: string) => string;
}

/** The languages stemmed, each with a Snowball stemmer (English: Porter's, also a Snowball algorithm). */
export const LANGUAGES: readonly Language[] = [
  { code: 'en', franc: 'eng', script: 'latin', stem: english },
  { code: 'es', franc: 'spa', script: 'latin', stem: spanish },
  { code: 'fr', franc: 'fra', script: 'latin', stem: french },
  { code: 'de', franc: 'deu', script: 'latin', stem: german },
  { code: 'pt', franc: 'por', script: 'latin', stem: portuguese },
  { code: 'it', franc: 'ita', script: 'latin', stem: italian },
  { code: 'nl', franc: 'nld', script: 'latin', stem: dutch },
  { code: 'sv', franc: 'swe', script: 'latin', stem: swedish },
  { code: 'ro', franc: 'ron', script: 'latin', stem: romanian },
  { code: 'hu', franc: 'hun', script: 'latin', stem: hungarian },
  { code: 'tr', franc: 'tur', script: 'latin', stem: turkish },
  { code: 'id', franc: 'ind', script: 'latin', stem: indonesian },
  { code: 'ru', franc: 'rus', script: 'cyrillic', stem: russian },
  { code: 'uk', franc: 'ukr', script: 'cyrillic', stem: ukrainian },
  { code: 'bg', franc: 'bul', script: 'cyrillic', stem: bulgarian },
  { code: 'el', franc: 'ell', script: 'greek', stem: greek },
  { code: 'ar', franc: 'arb', script: 'arabic', stem: arabic },
];
const BY_CODE = new Map(LANGUAGES.map((l) => [l.code, l]));

const SCRIPTS: Array<[Script, RegExp]> = [
  ['latin', /\p{Script=Latin}/u],
  ['cyrillic', /\p{Script=Cyrillic}/u],
  ['greek', /\p{Script=Greek}/u],
  ['arabic', /\p{Script=Arabic}/u],
];

/** The script (among those with stemmers) of the first letter of `token` that has one, or null. */
export function scriptOf(token: string): Script | null {
  const c = token.charCodeAt(0) | 0x20;
  if (c >= 0x61 && c <= 0x7a) return 'latin';
  for (const [script, re] of SCRIPTS) if (re.test(token)) return script;
  return null;
}

/** Characters of a document read for language detection (enough for a registry description). */
const DETECT_CHARS = 120;
/** franc's penalty for a trigram the language model lacks. */
const MAX_DIFFERENCE = 300;
const SCRIPT_MODEL: Record<Script, string> = { latin: 'Latin', cyrillic: 'Cyrillic', greek: '', arabic: 'Arabic' };

/**
 * franc-min's trigram models of our languages, per script: trigram -> rank.
 * franc-min itself answers in about 150 us per description (it first ranks
 * all scripts and all its languages); the same distance over only the
 * languages with a stemmer takes a few microseconds.
 */
const MODELS = new Map<Script, { codes: string[]; ranks: Map<string, Int32Array> }>();
for (const script of ['latin', 'cyrillic', 'greek', 'arabic'] as const) {
  const table = (trigramModels as Record<string, Record<string, string> | undefined>)[SCRIPT_MODEL[script]];
  const langs = LANGUAGES.filter((l) => l.script === script && table?.[l.franc]);
  if (!table || langs.length === 0) continue;
  // One lookup per trigram gives its rank in every language (-1: absent).
  const ranks = new Map<string, Int32Array>();
  langs.forEach((l, i) => {
    table[l.franc]!.split('|').forEach((t, rank) => {
      let row = ranks.get(t);
      if (!row) ranks.set(t, (row = new Int32Array(langs.length).fill(-1)));
      row[i] = rank;
    });
  });
  MODELS.set(script, { codes: langs.map((l) => l.code), ranks });
}

/**
 * The document's language code among LANGUAGES, or null when it cannot be
 * told: the script with the most letters picks the candidates; a script with
 * one language (Greek, Arabic here) decides alone; otherwise franc's trigram
 * distance ranks the candidates (the text must hold 10 letters or more).
 */
export function detectLanguage(text: string): string | null {
  const sample = text.slice(0, DETECT_CHARS);
  const counts = new Map<Script, number>();
  let letters = 0;
  for (const ch of sample) {
    const c = ch.charCodeAt(0);
    const script: Script | null = c < 0x80 ? ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a ? 'latin' : null) : scriptOf(ch);
    if (script) {
      counts.set(script, (counts.get(script) ?? 0) + 1);
      letters++;
    }
  }
  let script: Script | null = null;
  let most = 0;
  for (const [sc, n] of counts) if (n > most) [script, most] = [sc, n];
  if (script === null || letters < 10) return null;
  const models = MODELS.get(script);
  if (!models) {
    const only = LANGUAGES.filter((l) => l.script === script);
    return only.length === 1 ? only[0]!.code : null;
  }
  // franc's trigrams: punctuation and digits (U+0021-0040) become spaces, lowercase, padded.
  const clean = ` ${sample
    .replace(/[\u0021-\u0040]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase()} `;
  const grams = new Map<string, number>();
  for (let i = 0; i + 3 <= clean.length; i++) {
    const g = clean.slice(i, i + 3);
    grams.set(g, (grams.get(g) ?? 0) + 1);
  }
  const distance = new Float64Array(models.codes.length);
  for (const [g, count] of grams) {
    const row = models.ranks.get(g);
    for (let i = 0; i < distance.length; i++) {
      const rank = row ? row[i]! : -1;
      distance[i]! += rank < 0 ? MAX_DIFFERENCE : Math.abs(count - rank - 1);
    }
  }
  let best: string | null = null;
  let bestDistance = Infinity;
  distance.forEach((d, i) => {
    if (d < bestDistance) [best, bestDistance] = [models.codes[i]!, d];
  });
  return best;
}

/** Terms are cached per language; a cache is dropped when it grows past this. */
const CACHE_LIMIT = 200_000;
const termCache = new Map<string, Map<string, string>>();
const foldCache = new Map<string, string>();

/** `fold`, cached (queries fold the same words and word halves again and again). */
export function plain(lower: string): string {
  let f = foldCache.get(lower);
  if (f === undefined) {
    f = fold(lower);
    if (foldCache.size >= CACHE_LIMIT) foldCache.clear();
    foldCache.set(lower, f);
  }
  return f;
}

/**
 * The index term of a lowercase token in language `lang`: `<lang>:<folded
 * stem>`, or the plain folded token when `lang` is null or the token is not in
 * the language's script.
 */
export function term(lang: string | null, lower: string): string {
  if (DIGITS.test(lower)) return lower;
  if (lang === null) return plain(lower);
  let cache = termCache.get(lang);
  if (!cache) termCache.set(lang, (cache = new Map()));
  let t = cache.get(lower);
  if (t === undefined) {
    const language = BY_CODE.get(lang);
    if (!language || scriptOf(lower) !== language.script) t = plain(lower);
    else {
      const stemmed = fold(language.stem(lower));
      t = `${lang}:${stemmed.length > 0 ? stemmed : plain(lower)}`;
    }
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(lower, t);
  }
  return t;
}

/** The language a term belongs to ('en' for `en:password`), or null for a plain token. */
export function termLanguage(t: string): string | null {
  const i = t.indexOf(':');
  return i > 0 ? t.slice(0, i) : null;
}

// ISO 4217: "250 USD to EUR" is also read as the currencies' names, in the
// document's language, from the platform's CLDR data (Intl.DisplayNames), so
// "dollars" and "euros" find it. Only codes written in capitals count in a
// document; in a query any case does (queries are typed in lower case).
const CURRENCIES = new Set((Intl as { supportedValuesOf?: (k: string) => string[] }).supportedValuesOf?.('currency') ?? []);
const currencyNames = new Map<string, string[]>();

/** Lowercase words (3 letters or more) of a currency's name in `lang`, or [] if `code` is not an ISO 4217 code. */
export function currencyWords(code: string, lang: string): string[] {
  const upper = code.toUpperCase();
  if (upper.length !== 3 || !CURRENCIES.has(upper)) return [];
  const key = `${upper}/${lang}`;
  let out = currencyNames.get(key);
  if (!out) {
    let name = '';
    try {
      name = new Intl.DisplayNames([lang], { type: 'currency' }).of(upper) ?? '';
    } catch {
      name = '';
    }
    out =
      name === upper
        ? []
        : words(name)
            .filter((w) => !w.bigram && w.lower.length >= 3 && w.lower !== code.toLowerCase())
            .map((w) => w.lower);
    currencyNames.set(key, out);
  }
  return out;
}

const HYPHENATED = /\p{L}+(?:[-\u2010\u2011]\p{L}+)+/gu;
/** A number (nothing to stem or fold; not cached). */
const DIGITS = /^\p{Nd}+$/u;

/** Term frequencies of a document, name tokens counting `nameWeight` times, and its language. */
export function documentTerms(name: string, description: string, nameWeight: number): { lang: string | null; tf: Map<string, number> } {
  const lang = detectLanguage(`${name} ${description}`);
  const tf = new Map<string, number>();
  const add = (list: Word[], weight: number) => {
    for (const w of list) {
      const t = w.bigram ? w.lower : term(lang, w.lower);
      if (t.length === 0) continue;
      tf.set(t, (tf.get(t) ?? 0) + weight);
      if (w.upper && w.lower.length === 3) {
        for (const c of currencyWords(w.lower, lang ?? 'en')) {
          const ct = term(lang, c);
          tf.set(ct, (tf.get(ct) ?? 0) + weight);
        }
      }
    }
  };
  add(words(name), nameWeight);
  add(words(description), 1);
  // Hyphenated description words are also indexed joined ("E-Mail" -> email, "Wi-Fi" -> wifi);
  // letters only, and not in names (slugs such as weather-now, split at query time instead).
  for (const m of description.matchAll(HYPHENATED)) {
    const parts = m[0].split(/[-\u2010\u2011]/);
    for (let i = 0; i + 1 < parts.length; i++) {
      const t = term(lang, (parts[i]! + parts[i + 1]!).normalize('NFKC').toLowerCase());
      if (t.length > 0) tf.set(t, (tf.get(t) ?? 0) + 1);
    }
  }
  return { lang, tf };
}
