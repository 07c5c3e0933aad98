import { describe, expect, it } from 'vitest';
import { displayText } from '../src/index.js';

describe('displayText', () => {
  it('removes controls, format and bidi characters, separators and other invisible code points', () => {
    expect(displayText('Claude (Anthropic) \u2713 verified\u202e...')).toBe('Claude (Anthropic) \u2713 verified...');
    const invisible = [
      '\u0000',
      '\u0007',
      '\u001b',
      '\u007f',
      '\u0085',
      '\u009f', // C0, DEL, C1
      '\u00ad',
      '\u061c',
      '\u180e', // soft hyphen, Arabic letter mark, Mongolian vowel separator
      '\u200b',
      '\u200c',
      '\u200d',
      '\u200e',
      '\u200f', // zero widths, LRM, RLM
      '\u2028',
      '\u2029', // line and paragraph separators
      '\u202a',
      '\u202b',
      '\u202c',
      '\u202d',
      '\u202e', // embeddings and overrides
      '\u2060',
      '\u2061',
      '\u2064',
      '\u2065',
      '\u2066',
      '\u2067',
      '\u2068',
      '\u2069',
      '\u206a',
      '\u206f', // word joiner .. isolates .. deprecated
      '\ufeff',
      '\u3164',
      '\ufe0f',
      '\u{e0041}',
      '\ud800',
      '\udc00', // BOM, Hangul filler, variation selector, tag, lone surrogates
    ];
    for (const c of invisible) expect(displayText(`a${c}b`), `U+${c.codePointAt(0)!.toString(16)}`).toBe('ab');
  });

  it('keeps visible text of any script, collapses white space and trims', () => {
    expect(displayText('  Météo \t\n  Paris  ')).toBe('Météo Paris');
    expect(displayText('تطبيق الطقس')).toBe('تطبيق الطقس');
    expect(displayText('天气 🌦️ app')).toBe('天气 🌦 app');
    expect(displayText('a\u00a0\u3000b')).toBe('a b');
  });

  it('gives the fallback when nothing visible is left', () => {
    expect(displayText('\u200b\u202e\u2066\ufeff', 'Unnamed app')).toBe('Unnamed app');
    expect(displayText('   ')).toBe('');
  });
});
