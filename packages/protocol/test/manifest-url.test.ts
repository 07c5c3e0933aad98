import { describe, expect, it } from 'vitest';
import { manifestUrl } from '@farebox/protocol';

describe('manifestUrl', () => {
  it('puts the manifest next to the paid route, without its query or fragment', () => {
    expect(manifestUrl('https://svc.example/')).toBe('https://svc.example/manifest');
    expect(manifestUrl('https://svc.example/api/words/')).toBe('https://svc.example/api/words/manifest');
    expect(manifestUrl('https://svc.example/api/words?x=1#top')).toBe('https://svc.example/api/words/manifest');
    expect(manifestUrl('http://127.0.0.1:8080')).toBe('http://127.0.0.1:8080/manifest');
  });

  it('refuses what is not an absolute URL', () => {
    expect(() => manifestUrl('/relative')).toThrow();
  });
});
