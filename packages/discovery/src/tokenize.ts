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
 * No stemming and no stop words: both are language-specific; BM25's IDF already
 * gives frequent words little weight.
 */

const NON_WORD = /[^\p{L}\p{N}\p{M}]+/u;
const SCRIPT_RUN = /([\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}ー々〆]+)/u;
const IS_BIGRAM_SCRIPT = /^[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}ー々〆]/u;
const DIACRITICS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;
const CAMEL = /(?<=[\p{Ll}\p{N}])(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/gu;

/** Longest token kept (longer ones are truncated so junk cannot bloat the index). */
export const MAX_TOKEN_LENGTH = 64;

export function tokenize(text: string): string[] {
  const out: string[] = [];
  const spaced = text.normalize('NFKC').replace(CAMEL, ' ');
  for (const word of spaced.toLowerCase().split(NON_WORD)) {
    if (word.length === 0) continue;
    for (const part of word.split(SCRIPT_RUN)) {
      if (part.length === 0) continue;
      if (IS_BIGRAM_SCRIPT.test(part)) pushBigrams(part, out);
      else {
        const folded = part.normalize('NFD').replace(DIACRITICS, '').normalize('NFC');
        if (folded.length > 0) out.push(folded.slice(0, MAX_TOKEN_LENGTH));
      }
    }
  }
  return out;
}

function pushBigrams(run: string, out: string[]): void {
  const chars = Array.from(run);
  if (chars.length === 1) {
    out.push(chars[0]!);
    return;
  }
  for (let i = 0; i + 1 < chars.length; i++) out.push(chars[i]! + chars[i + 1]!);
}
