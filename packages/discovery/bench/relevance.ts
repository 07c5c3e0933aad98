/**
 * The relevance set (bench/relevance/: services and judged queries in seven
 * languages) and its figures: hit@3, nDCG@10 with graded gains, Recall@5, by
 * group. Shared by the bench (search.ts, which prints them) and the ranking
 * test (test/relevance.test.ts, which holds them to their bounds).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SearchIndex } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
export interface Service {
  id: string;
  lang: string;
  name: string;
  description: string;
}
export interface Query {
  id: string;
  lang: string;
  query: string;
  relevant: string[];
  /** 'inflected': plain same-language queries with inflected, compound, partial or currency-code words; 'short': one or two words. */
  group?: string;
  /** Graded judgements (3 does what was asked, 2 closely related, 1 mentions it in passing); without them every `relevant` service has grade 1. */
  grades?: Record<string, number>;
}

export const services = (JSON.parse(readFileSync(join(here, 'relevance', 'services.json'), 'utf8')) as { services: Service[] }).services;
export const queries = (JSON.parse(readFileSync(join(here, 'relevance', 'queries.json'), 'utf8')) as { queries: Query[] }).queries;

/** nDCG@k with gains 2^grade - 1 (a service in `relevant` without a grade has grade 1). */
export function ndcgAt(ranked: string[], q: Query, k: number): number {
  const grade = (id: string) => q.grades?.[id] ?? (q.relevant.includes(id) ? 1 : 0);
  let dcg = 0;
  ranked.slice(0, k).forEach((id, i) => {
    dcg += (2 ** grade(id) - 1) / Math.log2(i + 2);
  });
  const gains = q.grades ? Object.values(q.grades) : q.relevant.map(() => 1);
  const ideal = gains
    .sort((a, b) => b - a)
    .slice(0, k)
    .reduce((sum, g, i) => sum + (2 ** g - 1) / Math.log2(i + 2), 0);
  return ideal > 0 ? dcg / ideal : 0;
}
export function recallAt(ranked: string[], relevant: Set<string>, k: number): number {
  return ranked.slice(0, k).filter((id) => relevant.has(id)).length / Math.min(k, relevant.size);
}

/** Queries whose judged services include one in the query's own language (keyword search can find those). */
const serviceLang = new Map(services.map((s) => [s.id, s.lang]));
export const sameLanguage = (q: Query) => q.relevant.some((id) => serviceLang.get(id) === q.lang);

export interface Figures {
  ndcg: number;
  recall: number;
  hit3: number;
  n: number;
}
export type Group = 'all' | 'same' | 'original' | 'inflected' | 'short' | 'oneWord' | 'twoWords';
export const GROUPS: Array<[Group, string]> = [
  ['all', 'all judged'],
  ['same', 'same-language'],
  ['original', 'original (q001-q072)'],
  ['inflected', 'inflected (q075-q114)'],
  ['short', 'one/two words (q115-q136)'],
  ['oneWord', '  one word'],
  ['twoWords', '  two words'],
];

/** A reordering of a query's hits (the gateway weighing relevance by health: `rankByHealth`). */
export type Rerank = (hits: Array<{ id: string; score: number }>) => Array<{ id: string; score: number }>;

export function evaluate(index: SearchIndex, vectorsFor: Map<string, Float32Array> | null, rerank?: Rerank) {
  const sums = Object.fromEntries(GROUPS.map(([g]) => [g, { ndcg: 0, recall: 0, hit3: 0, n: 0 }])) as Record<Group, Figures>;
  let nonsenseHits = 0;
  let nonsense = 0;
  const misses: string[] = [];
  for (const q of queries) {
    const found = index.searchWithVector(q.query, vectorsFor?.get(q.id) ?? null, { limit: 10 });
    const hits = rerank ? rerank(found) : found;
    if (q.relevant.length === 0) {
      nonsense++;
      if (hits.length > 0) nonsenseHits++;
      continue;
    }
    const rel = new Set(q.relevant);
    const ranked = hits.map((h) => h.id);
    const hit3 = ranked.slice(0, 3).some((id) => rel.has(id)) ? 1 : 0;
    const groups = [sums.all, q.group === 'inflected' ? sums.inflected : q.group === 'short' ? sums.short : sums.original];
    if (sameLanguage(q)) groups.push(sums.same);
    if (q.group === 'short') groups.push(q.query.trim().split(/\s+/).length === 1 ? sums.oneWord : sums.twoWords);
    for (const f of groups) {
      f.ndcg += ndcgAt(ranked, q, 10);
      f.recall += recallAt(ranked, rel, 5);
      f.hit3 += hit3;
      f.n++;
    }
    if (!hit3 && sameLanguage(q)) misses.push(`${q.id} "${q.query}"`);
  }
  return { sums, nonsenseHits, nonsense, misses };
}
