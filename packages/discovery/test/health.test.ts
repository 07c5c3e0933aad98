import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { healthFactor, healthStatus, rankByHealth, type HealthStatus } from '@farebox/discovery';

const judged = (successRate: number | null, calls = 100) => ({ status: healthStatus(calls, successRate), successRate });

describe('ranking that prefers what works (docs/search.md, "Health")', () => {
  it('judges a status from enough calls, and weighs relevance only below 95 % answered', () => {
    expect(healthStatus(9, 0)).toBe('new');
    expect(healthStatus(10, 0.95)).toBe('ok');
    expect(healthStatus(10, 0.9499)).toBe('degraded');
    expect(healthStatus(10, 0.5)).toBe('degraded');
    expect(healthStatus(10, 0.4999)).toBe('failing');
    expect(healthFactor(undefined)).toBe(1);
    expect(healthFactor(judged(0, 3))).toBe(1);
    expect(healthFactor(judged(0.97))).toBe(1);
    expect(healthFactor(judged(0.8))).toBe(0.8);
    expect(healthFactor(judged(0))).toBe(0.1);
  });

  it('a failing service sinks below a working one of similar relevance; a new one keeps its place', () => {
    const hits = [
      { id: 'flaky', score: 0.9 },
      { id: 'fresh', score: 0.85 },
      { id: 'steady', score: 0.8 },
    ];
    const health: Record<string, { status: HealthStatus; successRate: number | null }> = {
      flaky: judged(0.1),
      fresh: judged(null, 0),
      steady: judged(1),
    };
    expect(rankByHealth(hits, (h) => health[h.id]).map((h) => h.id)).toEqual(['fresh', 'steady', 'flaky']);
  });

  it('healthy and new services keep the relevance order, and the fused score is monotonic in relevance and in the answered share', () => {
    const hit = fc.record({
      score: fc.double({ min: 0, max: 1, noNaN: true }),
      rate: fc.option(fc.double({ min: 0, max: 1, noNaN: true })),
      calls: fc.nat(500),
    });
    fc.assert(
      fc.property(fc.array(hit, { maxLength: 30 }), (raw) => {
        const hits = raw.map((h, i) => ({ id: String(i), ...h }));
        const healthy = rankByHealth(hits, (h) => (h.calls % 2 === 0 ? judged(1, h.calls) : judged(null, 0)));
        const byRelevance = [...hits].sort((a, b) => b.score - a.score || Number(a.id) - Number(b.id));
        expect(healthy.map((h) => h.id)).toEqual(byRelevance.map((h) => h.id));
        const fused = rankByHealth(hits, (h) => judged(h.rate, h.calls));
        for (let i = 1; i < fused.length; i++) expect(fused[i - 1]!.score).toBeGreaterThanOrEqual(fused[i]!.score);
      }),
    );
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (a, b) => {
        const [lo, hi] = a < b ? [a, b] : [b, a];
        expect(healthFactor(judged(lo))).toBeLessThanOrEqual(healthFactor(judged(hi)));
      }),
    );
  });
});
