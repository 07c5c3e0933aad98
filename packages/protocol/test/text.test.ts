import { describe, expect, it } from 'vitest';
import {
  INVALID_SERVICE_NAME,
  ManifestSchema,
  ServiceNameSchema,
  codePointLength,
  firstIssueMessage,
  isValidServiceName,
  printable,
  serviceNameProblem,
  textProblem,
  unsafeTextIn,
} from '../src/index.js';

describe('the service name policy', () => {
  it('takes lower-case ASCII letters, digits and single hyphens, 1 to 32, starting and ending with a letter or digit', () => {
    for (const ok of ['echo', 'a', '7', 'fx-convert', 'word-count-2', 'a1-b2-c3', 'x'.repeat(32), '0-0']) expect(serviceNameProblem(ok), ok).toBeUndefined();
  });

  it('refuses the names that deceive: look-alikes, case, invisible, spaces, bidi, punctuation', () => {
    const deceptive = [
      '\u0435cho', // Cyrillic е
      'echo\u200b', // zero-width space
      'ECHO',
      'Echo',
      'echo ',
      ' echo',
      '\u202eohce', // right-to-left override
      'Qa Y!',
      'my_service',
      'my.service',
      'echo--x',
      '-echo',
      'echo-',
      '-',
      'e\u0301cho',
      'ｅｃｈｏ', // full-width
      'a\u0000b',
      '\ud800x',
      'echo\n',
    ];
    for (const name of deceptive) expect(serviceNameProblem(name), printable(name)).toBe(INVALID_SERVICE_NAME);
    expect(INVALID_SERVICE_NAME).toBe(
      'invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit',
    );
  });

  it('keeps the messages of an empty and of a long name', () => {
    expect(serviceNameProblem('')).toBe('service required');
    expect(serviceNameProblem(undefined)).toBe('service required');
    expect(serviceNameProblem('x'.repeat(33))).toBe('service name too long (max 32)');
    expect(isValidServiceName('echo')).toBe(true);
    expect(isValidServiceName('ECHO')).toBe(false);
  });

  it('is the rule of ServiceNameSchema and of a manifest', () => {
    const first = (v: unknown) => {
      const r = ServiceNameSchema.safeParse(v);
      return r.success ? undefined : firstIssueMessage(r.error);
    };
    expect(first('echo')).toBeUndefined();
    expect(first('')).toBe('service required');
    expect(first(7)).toBe('service required');
    expect(first('x'.repeat(33))).toBe('service name too long (max 32)');
    expect(first('Echo')).toBe(INVALID_SERVICE_NAME);
    const manifest = {
      service: 'Echo',
      ownerWallet: 'G',
      pricePerCall: 1,
      priceBaseUnits: '1',
      description: '',
      dynamicPricing: false,
      payments: [],
      network: 'local',
    };
    expect(ManifestSchema.safeParse(manifest).error?.issues.some((i) => i.message === INVALID_SERVICE_NAME)).toBe(true);
  });
});

describe('text a request may carry', () => {
  it('counts characters as code points', () => {
    expect(codePointLength('😀'.repeat(64))).toBe(64);
    expect(codePointLength('abc')).toBe(3);
    expect(codePointLength('\ud800x')).toBe(2);
    expect(codePointLength('x\udc00\ud800')).toBe(3);
  });

  it('refuses NUL, C0 and C1 controls and unpaired surrogates; free text keeps tab, line feed and carriage return', () => {
    expect(textProblem('a\u0000b')).toBe('control character U+0000 not allowed');
    expect(textProblem('a\u001bb')).toBe('control character U+001B not allowed');
    expect(textProblem('a\u007fb')).toBe('control character U+007F not allowed');
    expect(textProblem('a\u0085b')).toBe('control character U+0085 not allowed');
    expect(textProblem('a\u009fb')).toBe('control character U+009F not allowed');
    expect(textProblem('\ud800x')).toBe('unpaired surrogate U+D800 not allowed');
    expect(textProblem('x\udc00')).toBe('unpaired surrogate U+DC00 not allowed');
    expect(textProblem('\udc00\ud800')).toBe('unpaired surrogate U+DC00 not allowed');
    expect(textProblem('line\tone\r\nline two')).toBeUndefined();
    expect(textProblem('😀 émoji, ünïcode, \u00a0\u00ff')).toBeUndefined();
    expect(textProblem('tab\there', 'name')).toBe('control character U+0009 not allowed');
    expect(textProblem('x\ud800\u0001', 'name')).toBe('unpaired surrogate U+D800 not allowed');
  });

  it('names the field of a body that carries one, in values and field names, at any depth', () => {
    expect(unsafeTextIn({ service: 'a\u0000b', payload: {} })).toBe('invalid service: control character U+0000 not allowed');
    expect(unsafeTextIn({ service: 'echo', payload: { items: ['ok', { 'a b': '\ud800x' }] } })).toBe(
      'invalid payload.items[1]["a b"]: unpaired surrogate U+D800 not allowed',
    );
    expect(unsafeTextIn({ payload: { 'k\u0001': 1 } })).toBe('invalid field name in payload: control character U+0001 not allowed');
    expect(unsafeTextIn({ 'k\u0085': 1 })).toBe('invalid field name: control character U+0085 not allowed');
    expect(unsafeTextIn('\u0000')).toBe('invalid body: control character U+0000 not allowed');
    expect(unsafeTextIn({ description: 'two\nlines\tand a tab', n: 1, b: true, z: null, list: [1, 2, '😀'] })).toBeUndefined();
    let deep: unknown = 'x\u0002';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(unsafeTextIn(deep)).toMatch(/^invalid …(\[0\])+: control character U\+0002 not allowed$/);
  });

  it('shows a string with everything but printable ASCII escaped', () => {
    expect(printable('\u0435cho\u200b')).toBe('\\u0435cho\\u200b');
    expect(printable('a"b\\')).toBe('a\\"b\\\\');
    expect(printable('😀')).toBe('\\ud83d\\ude00');
  });
});
