import { describe, expect, it } from 'vitest';
import { cacheLifetime, isMetadataDocumentUrl, metadataUrlProblem } from '../src/oauth/client-metadata.js';

const DAY = 24 * 3600 * 1000;
const NOW = Date.parse('2026-11-26T12:00:00Z');

describe('Client ID Metadata Documents: the URL rules and the HTTP cache rules', () => {
  it('takes an https URL with a path as a document URL, and says why another is not', () => {
    expect(isMetadataDocumentUrl('https://app.example/oauth/client.json')).toBe(true);
    expect(isMetadataDocumentUrl('fbc_abc')).toBe(false);
    expect(isMetadataDocumentUrl(`https://app.example/${'a'.repeat(2048)}`)).toBe(false);
    expect(metadataUrlProblem('https://app.example/oauth/client.json')).toBeUndefined();
    expect(metadataUrlProblem('https://app.example/')).toBe('a client_id URL must have a path');
    expect(metadataUrlProblem('http://app.example/client.json')).toBe('a client_id URL must use https');
    expect(metadataUrlProblem('https://user:pw@app.example/client.json')).toBe('a client_id URL must not carry credentials');
    expect(metadataUrlProblem('https://app.example/client.json#x')).toBe('a client_id URL must not have a fragment');
    for (const dots of ['/a/./client.json', '/a/../client.json', '/a/%2e%2E/client.json', '/a/%2e/client.json']) {
      expect(metadataUrlProblem(`https://app.example${dots}`), dots).toBe('a client_id URL must not have dot segments');
    }
    expect(metadataUrlProblem('https://app.example/a/.well-known/client.json')).toBeUndefined();
  });

  it('caches for max-age (bounded), until Expires, and not at all for no-store, no-cache, private or no headers', () => {
    const h = (headers: Record<string, string>) => new Headers(headers);
    expect(cacheLifetime(h({ 'cache-control': 'public, max-age=600' }), NOW, DAY)).toBe(600_000);
    expect(cacheLifetime(h({ 'cache-control': 'max-age=999999999' }), NOW, DAY)).toBe(DAY);
    expect(cacheLifetime(h({ 'cache-control': 'no-store, max-age=600' }), NOW, DAY)).toBe(0);
    expect(cacheLifetime(h({ 'cache-control': 'no-cache' }), NOW, DAY)).toBe(0);
    expect(cacheLifetime(h({ 'cache-control': 'private, max-age=60' }), NOW, DAY)).toBe(0);
    expect(cacheLifetime(h({ expires: new Date(NOW + 120_000).toUTCString() }), NOW, DAY)).toBe(120_000);
    expect(cacheLifetime(h({ expires: 'not a date' }), NOW, DAY)).toBe(0);
    expect(cacheLifetime(h({}), NOW, DAY)).toBe(0);
  });

  it("counts the age a cache on the way reports, and reads Expires against the origin's Date", () => {
    const h = (headers: Record<string, string>) => new Headers(headers);
    expect(cacheLifetime(h({ 'cache-control': 'max-age=600', age: '250' }), NOW, DAY)).toBe(350_000);
    expect(cacheLifetime(h({ 'cache-control': 'max-age=600', age: '900' }), NOW, DAY)).toBe(0);
    expect(cacheLifetime(h({ 'cache-control': 'max-age=600', age: 'soon' }), NOW, DAY)).toBe(600_000);
    // The origin's clock runs an hour behind ours: its Expires is still 2 minutes after its Date.
    const originNow = NOW - 3_600_000;
    expect(cacheLifetime(h({ date: new Date(originNow).toUTCString(), expires: new Date(originNow + 120_000).toUTCString() }), NOW, DAY)).toBe(120_000);
    expect(cacheLifetime(h({ 'cache-control': 'max-age=60', expires: new Date(NOW + 3_600_000).toUTCString() }), NOW, DAY)).toBe(60_000);
  });
});
