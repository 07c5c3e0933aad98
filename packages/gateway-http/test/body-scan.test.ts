import fc from 'fast-check';
import { unsafeTextIn } from '@farebox/protocol';
import { describe, expect, it } from 'vitest';
import { mayHoldUnsafeText } from '../src/body.js';

describe("the call route's scan for text the rule may refuse", () => {
  it('never lets through a body whose strings break the text rule (any characters, in values and field names)', () => {
    const text = fc.string({
      unit: fc.oneof(
        fc.constantFrom('\u0000', '\u001b', '\u007f', '\u0085', '\u009f', '\ud800', '\udfff', '\t', '\\', '"', '\u00e9', '\u00a0', '\u2028'),
        fc.nat(0xffff).map((c) => String.fromCharCode(c)),
        fc.nat(0x10ffff).map((c) => String.fromCodePoint(c)),
      ),
      maxLength: 12,
    });
    const body = fc.dictionary(text, fc.oneof(text, fc.array(text, { maxLength: 3 }), fc.dictionary(text, text, { maxKeys: 2 })), { maxKeys: 4 });
    fc.assert(
      fc.property(body, (b) => {
        const bytes = Buffer.from(JSON.stringify(b), 'utf8');
        if (unsafeTextIn(JSON.parse(bytes.toString('utf8'))) !== undefined) expect(mayHoldUnsafeText(bytes)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('skips the walk for plain bodies, escaped quotes, newlines and backslashes included', () => {
    for (const plain of [{ service: 'echo', payload: { hi: 1 } }, { text: 'a "quoted"\nline\twith \\ and é ° ©' }])
      expect(mayHoldUnsafeText(Buffer.from(JSON.stringify(plain)))).toBe(false);
    // An escaped backslash before `u0000` is text, not an escape; `\u0000` itself is one.
    expect(mayHoldUnsafeText(Buffer.from('{"a":"\\\\u0000"}'))).toBe(false);
    expect(mayHoldUnsafeText(Buffer.from('{"a":"\\u0000"}'))).toBe(true);
  });
});
