import { describe, expect, it } from 'vitest';
import { DiscoveryError, createSearchIndex } from '@farebox/discovery';

const weather = { id: 'weather-now', name: 'weather-now', description: 'Hourly weather forecasts for any city' };
const translate = { id: 'lingua', name: 'lingua', description: 'Traduction de textes entre 40 langues' };
const meteo = { id: 'meteo-geneve', name: 'Météo Genève', description: 'Prévisions météo pour la Suisse romande' };
const tenki = { id: 'tenki', name: '天気予報', description: '日本全国の天気予報サービス' };

describe('keyword search', () => {
  it('finds a service the moment it is added and not after it is removed', async () => {
    const index = createSearchIndex();
    void index.upsert(weather);
    expect((await index.search('weather')).map((h) => h.id)).toEqual(['weather-now']);
    expect(index.remove('weather-now')).toBe(true);
    expect(await index.search('weather')).toEqual([]);
    expect(index.remove('weather-now')).toBe(false);
    expect(index.size).toBe(0);
  });

  it('shows an updated description at once and forgets the old words', async () => {
    const index = createSearchIndex();
    await index.upsert(weather);
    await index.upsert({ ...weather, description: 'Tide tables for harbours' });
    expect(await index.search('hourly forecasts')).toEqual([]);
    expect((await index.search('tide tables')).map((h) => h.id)).toEqual(['weather-now']);
    expect(index.size).toBe(1);
  });

  it('matches accented and unaccented spellings both ways', async () => {
    const index = createSearchIndex();
    await index.upsert(meteo);
    expect((await index.search('meteo geneve')).map((h) => h.id)).toEqual(['meteo-geneve']);
    expect((await index.search('PRÉVISIONS')).map((h) => h.id)).toEqual(['meteo-geneve']);
  });

  it('finds Japanese text by a substring without spaces', async () => {
    const index = createSearchIndex();
    await index.upsert(tenki);
    await index.upsert(weather);
    expect((await index.search('天気予報')).map((h) => h.id)).toEqual(['tenki']);
    expect((await index.search('全国')).map((h) => h.id)).toEqual(['tenki']);
    expect(await index.search('天国')).toEqual([]);
  });

  it('returns nothing for a nonsense query instead of the nearest services', async () => {
    const index = createSearchIndex();
    for (const d of [weather, translate, meteo, tenki]) await index.upsert(d);
    expect(await index.search('xqzv blorf')).toEqual([]);
    expect(await index.search('')).toEqual([]);
    expect(await index.search('   ')).toEqual([]);
  });

  it('drops a weak match on a common word next to unknown words', async () => {
    const index = createSearchIndex();
    for (let i = 0; i < 50; i++) await index.upsert({ id: `svc-${i}`, name: `svc-${i}`, description: `service api number ${i}` });
    expect(await index.search('api qqqzzzx')).toEqual([]);
    expect((await index.search('api')).length).toBe(10);
  });

  it('ranks a name match above a description match and scores 0.6 x BM25 without vectors', async () => {
    const index = createSearchIndex();
    await index.upsert({ id: 'a', name: 'invoice', description: 'create documents for customers' });
    await index.upsert({ id: 'b', name: 'docs', description: 'render an invoice as a pdf file today' });
    const hits = await index.search('invoice');
    expect(hits.map((h) => h.id)).toEqual(['a', 'b']);
    for (const h of hits) {
      expect(h.cosine).toBe(0);
      expect(h.raw.cosine).toBeNull();
      expect(h.score).toBeCloseTo(0.6 * h.bm25, 12);
    }
    // A full match (the ratio past 1) is near 1, not capped at it (docs/search.md, "Fusion").
    expect(hits[0]!.bm25).toBeGreaterThan(0.9);
    expect(hits[0]!.bm25).toBeLessThan(1);
  });

  it('honours the limit and refuses a bad one', async () => {
    const index = createSearchIndex();
    for (let i = 0; i < 30; i++) await index.upsert({ id: `w${i}`, name: `w${i}`, description: 'weather' });
    expect(await index.search('weather', { limit: 3 })).toHaveLength(3);
    await expect(index.search('weather', { limit: 0 })).rejects.toThrow(/limit must be an integer from 1 to 100/);
    await expect(index.search('weather', { limit: 101 })).rejects.toBeInstanceOf(DiscoveryError);
  });

  it('keeps the first ids when more services tie than the limit allows, whatever the insertion order', async () => {
    const index = createSearchIndex();
    for (const i of [7, 29, 3, 12, 0, 21, 1, 18, 10, 25]) await index.upsert({ id: `w${i}`, name: `w${i}`, description: 'weather' });
    expect((await index.search('weather', { limit: 3 })).map((h) => h.id)).toEqual(['w0', 'w1', 'w10']);
  });

  it('rejects an invalid document and leaves the index unchanged', async () => {
    const index = createSearchIndex();
    await index.upsert(weather);
    expect(() => index.upsert({ id: '', name: 'x', description: 'y' })).toThrow(/id/);
    expect(() => index.upsert({ id: 'x', name: 'x', description: 'y'.repeat(9000) })).toThrow(/description/);
    expect(index.size).toBe(1);
    expect(index.ids()).toEqual(['weather-now']);
  });

  it('refuses weights that do not sum to one, listing every problem', () => {
    expect(() => createSearchIndex({ weights: { bm25: 0.7, vector: 0.4 } })).toThrow(/must equal 1/);
    expect(() => createSearchIndex({ floor: 2, cosineFloor: 1 })).toThrow(/floor.*cosineFloor|cosineFloor.*floor/);
  });

  it('reports keyword-only status when no model is configured', () => {
    const index = createSearchIndex();
    expect(index.status()).toMatchObject({ mode: 'keyword-only', reason: 'no embedding model configured' });
  });

  it('restores documents and bigint metadata from a snapshot', async () => {
    const index = createSearchIndex();
    await index.upsert({ ...weather, meta: { pricePerCall: 12_345_678_901_234_567_890n, endpoint: 'https://w.example' } });
    await index.upsert(tenki);
    const copy = createSearchIndex();
    await copy.load(index.snapshot());
    expect(copy.size).toBe(2);
    expect(copy.get('weather-now')?.meta).toEqual({ pricePerCall: 12_345_678_901_234_567_890n, endpoint: 'https://w.example' });
    expect((await copy.search('天気')).map((h) => h.id)).toEqual(['tenki']);
  });

  it('keeps indexing normally after loading a snapshot taken after removals', async () => {
    const index = createSearchIndex();
    for (const d of [weather, translate, meteo, tenki]) await index.upsert(d);
    index.remove('lingua');
    const copy = createSearchIndex();
    await copy.load(index.snapshot());
    expect(copy.ids().sort()).toEqual(['meteo-geneve', 'tenki', 'weather-now']);
    expect(await copy.search('traduction')).toEqual([]);
    await copy.upsert({ id: 'pago', name: 'pago', description: 'weather payments' });
    copy.remove('weather-now');
    expect((await copy.search('weather')).map((h) => h.id)).toEqual(['pago']);
    expect((await copy.search('prévisions')).map((h) => h.id)).toEqual(['meteo-geneve']);
    expect(copy.size).toBe(3);
  });

  it('refuses a corrupt snapshot and keeps its contents', async () => {
    const index = createSearchIndex();
    await index.upsert(weather);
    const bytes = index.snapshot();
    await expect(index.load(bytes.subarray(0, bytes.length - 3))).rejects.toThrow(/not a discovery snapshot/);
    await expect(index.load(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]))).rejects.toThrow(/magic/);
    expect(index.size).toBe(1);
  });
});
