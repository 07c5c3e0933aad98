import { describe, expect, it } from 'vitest';
import { createSearchIndex, type SearchHit, type ServiceDocument } from '@farebox/discovery';

// Issue 35: BM25' = min(1, x) gave every strong keyword match the same 1, so
// two strong matches ranked by name. BM25' is now monotonic in the raw score.

/** The weather-forecast service, and one that mentions weather only once (a shorter text, so a strong BM25 match too). */
const forecast: ServiceDocument = {
  id: 'weather-forecast',
  name: 'weather-forecast',
  description: 'Weather forecasts for any city: hourly weather, ten-day weather outlook, rain and wind.',
};
const guide: ServiceDocument = { id: 'city-guide', name: 'city-guide', description: 'Museums and restaurants, with the weather.' };
const bakery: ServiceDocument = { id: 'bakery-hours', name: 'bakery-hours', description: 'Opening hours of bakeries in the city centre.' };

async function indexOf(docs: ServiceDocument[], options: Parameters<typeof createSearchIndex>[0] = {}) {
  const index = createSearchIndex(options);
  for (const d of docs) await index.upsert(d);
  return index;
}

/** BM25' as docs/search.md states it: the ratio up to 0.8, then 0.8 + 0.2 * y / (y + 0.2) with y = x - 0.8. */
function knee(x: number): number {
  return x <= 0.8 ? x : 0.8 + (0.2 * (x - 0.8)) / (x - 0.8 + 0.2);
}

const ids = (hits: SearchHit[]) => hits.map((h) => h.id);

describe("ranking: BM25' keeps the order of the raw keyword scores", () => {
  it('puts the weather-forecast service above one that mentions weather once, with a higher score (the old cap tied them at 0.6 and ranked by name)', async () => {
    const docs = [guide, forecast, bakery];
    const hits = await (await indexOf(docs)).search('weather');
    expect(ids(hits)).toEqual(['weather-forecast', 'city-guide']);
    expect(hits[0]!.raw.bm25).toBeGreaterThan(hits[1]!.raw.bm25);
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
    // What the capped normalisation gave (kept as an option for the bench): both 0.6, the guide first by name.
    const capped = await (await indexOf(docs, { bm25Normalization: 'cap' })).search('weather');
    expect(capped.map((h) => [h.id, h.score])).toEqual([
      ['city-guide', 0.6],
      ['weather-forecast', 0.6],
    ]);
  });

  it('orders keyword-only hits exactly by raw BM25, with strictly lower scores for strictly lower raw scores, and keeps score = 0.6 x BM25', async () => {
    // Services repeating "invoice" 1..6 times in texts of different lengths: many strong matches.
    const docs = Array.from({ length: 12 }, (_x, i) => ({
      id: `svc-${String(i).padStart(2, '0')}`,
      name: i % 3 === 0 ? `invoice-${i}` : `svc-${i}`,
      description: `${'invoice '.repeat(1 + (i % 6))}${'filler words here '.repeat(i % 4)}`,
    }));
    docs.push({ id: 'other', name: 'other', description: 'weather and maps' });
    const index = await indexOf(docs);
    const hits = await index.search('invoice', { limit: 20 });
    expect(hits).toHaveLength(12);
    const x = (h: SearchHit) => h.raw.bm25;
    for (let i = 1; i < hits.length; i++) {
      expect(x(hits[i - 1]!)).toBeGreaterThanOrEqual(x(hits[i]!));
      if (x(hits[i - 1]!) > x(hits[i]!) + 1e-9) expect(hits[i - 1]!.score).toBeGreaterThan(hits[i]!.score);
    }
    // Several of them are past a full match (the cap would have made them all 1); all stay below 1.
    const ideal = hits[0]!.raw.bm25 / invertKnee(hits[0]!.bm25);
    expect(hits.filter((h) => h.raw.bm25 / ideal >= 1).length).toBeGreaterThan(3);
    for (const h of hits) {
      expect(h.bm25).toBeLessThan(1);
      expect(h.bm25).toBeCloseTo(knee(h.raw.bm25 / ideal), 12);
      expect(h.score).toBe(0.6 * h.bm25 + 0.4 * h.cosine);
    }
  });

  it("leaves weak matches as they were (below 0.8 BM25' is the plain ratio), so the relevance floor keeps its meaning", async () => {
    const docs = [forecast, guide, bakery, { id: 'api-svc', name: 'api-svc', description: 'an api for bakeries' }];
    const now = await (await indexOf(docs)).search('bakeries weather qqqzzzx', { limit: 10 });
    const before = await (await indexOf(docs, { bm25Normalization: 'cap' })).search('bakeries weather qqqzzzx', { limit: 10 });
    expect(now.length).toBeGreaterThan(0);
    for (const h of now) expect(h.bm25).toBeLessThan(0.8);
    expect(now.map((h) => [h.id, h.score])).toEqual(before.map((h) => [h.id, h.score]));
  });

  it("fuses the same BM25' with vectors: score = 0.6 x BM25' + 0.4 x cosine' exactly, in the flat scan and the approximate index alike", async () => {
    const dims = 8;
    const vec = (i: number) => Float32Array.from({ length: dims }, (_x, j) => (j === i % dims ? 1 : 0.1));
    const docs = [forecast, guide, bakery];
    const build = async (vectorIndex: 'flat' | 'hnsw') => {
      const index = createSearchIndex({ dims, vectorIndex });
      docs.forEach((d, i) => {
        void index.upsert(d);
        index.setVector(d.id, vec(i));
      });
      await index.idle();
      return index;
    };
    const flat = await build('flat');
    const query = vec(1); // near the guide's vector
    const hits = flat.searchWithVector('weather', query, { limit: 10 });
    for (const h of hits) expect(h.score).toBe(0.6 * h.bm25 + 0.4 * h.cosine);
    // The guide is the vector match, the forecast the stronger keyword match: each part counts.
    const byId = new Map(hits.map((h) => [h.id, h]));
    expect(byId.get('weather-forecast')!.bm25).toBeGreaterThan(byId.get('city-guide')!.bm25);
    expect(byId.get('city-guide')!.cosine).toBeGreaterThan(byId.get('weather-forecast')!.cosine);
    const approx = await build('hnsw');
    // With usearch the graph proposes candidates; without it the flat index answers. Same hits either way.
    const got = approx.searchWithVector('weather', query, { limit: 10 });
    expect(ids(got)).toEqual(ids(hits));
    got.forEach((h, i) => {
      expect(h.bm25).toBe(hits[i]!.bm25);
      // The graph's exact cosine and the SIMD scan's differ in the last float bits.
      expect(h.score).toBeCloseTo(hits[i]!.score, 6);
      expect(h.score).toBe(0.6 * h.bm25 + 0.4 * h.cosine);
    });
  });
});

/** The ratio x from BM25' (the inverse of the knee function; for checking the stated formula). */
function invertKnee(v: number): number {
  if (v <= 0.8) return v;
  // v = 0.8 + 0.2 y / (y + 0.2)  =>  y = 0.2 (v - 0.8) / (1 - v)
  return 0.8 + (0.2 * (v - 0.8)) / (1 - v);
}
