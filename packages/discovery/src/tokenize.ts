/**
 * Language-neutral tokenisation shared by documents and queries.
 *
 * 1. NFKC (full-width Latin and half-width kana become their ordinary forms).
 * 2. camelCase is split ("WeatherNow" -> weather now).
 * 3. Lowercase (locale-independent).
 * 4. Split on anything that is not a letter, number or combining mark.
 * 5. Runs of Han, Hiragana, Katakana, Hangul or Thai (no spaces between words)
 *    become overlapping character bigrams (a lone character stays a unigram).
 * 6. Other tokens are accent-folded: NFD, then the Combining Diacritical Marks
 *    blocks are dropped ("météo" -> "meteo", "Müller" -> "muller"). Marks that
 *    carry meaning in other scripts (Devanagari vowel signs, ...) are kept.
 * `tokenize` gives these surface forms; the keyword index stems them per
 * language on top (see analyze.ts).
 */

const NON_WORD = /[^\p{L}\p{N}\p{M}]+/u;
const SCRIPT_RUN = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}ー々〆]+)/u;
const IS_BIGRAM_SCRIPT = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}ー々〆]/u;
const DIACRITICS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;
const CAMEL = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/gu;

/** Longest token kept (longer ones are truncated so junk cannot bloat the index). */
export const MAX_TOKEN_LENGTH = 64;

/** A token before accent folding. */
export interface Word {
  /** Lowercase, NFKC, accents kept (what a stemmer wants). */
  lower: string;
  /** A character bigram (or lone character) of a script written without spaces. */
  bigram: boolean;
  /** Written in capitals in the text ("USD"). */
  upper: boolean;
}

/** The tokens of `text` in order, before accent folding. */
export function words(text: string): Word[] {
  const out: Word[] = [];
  const spaced = text.normalize('NFKC').replace(CAMEL, ' ');
  for (const word of spaced.split(NON_WORD)) {
    if (word.length === 0) continue;
    for (const part of word.split(SCRIPT_RUN)) {
      if (part.length === 0) continue;
      const lower = part.toLowerCase();
      if (IS_BIGRAM_SCRIPT.test(part)) pushBigrams(lower, out);
      else out.push({ lower, bigram: false, upper: lower !== part && part.toUpperCase() === part });
    }
  }
  return out;
}

/** Accent folding and truncation (the last step of `tokenize`); '' when nothing is left. */
export function fold(token: string): string {
  const folded = token.normalize('NFD').replace(DIACRITICS, '').normalize('NFC');
  return folded.slice(0, MAX_TOKEN_LENGTH);
}

export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const w of words(text)) {
    if (w.bigram) out.push(w.lower);
    else {
      const folded = fold(w.lower);
      if (folded.length > 0) out.push(folded);
    }
  }
  return out;
}

function pushBigrams(run: string, out: Word[]): void {
  const chars = Array.from(run);
  if (chars.length === 1) {
    out.push({ lower: chars[0]!, bigram: true, upper: false });
    return;
  }
  for (let i = 0; i + 1 < chars.length; i++) out.push({ lower: chars[i]! + chars[i + 1]!, bigram: true, upper: false });
}
