import { describe, expect, it } from 'vitest';
import { FlatVectorIndex } from '@farebox/discovery';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

describe('FlatVectorIndex', () => {
  it('computes the same cosines as a plain loop, for a dimension that is not a multiple of 8', () => {
    const rand = rng(7);
    const index = new FlatVectorIndex(13, 4);
    expect(index.simd).toBe(true);
    const rows: number[][] = [];
    for (let r = 0; r < 2500; r++) {
      const v = Array.from({ length: 13 }, rand);
      rows.push(v);
      index.set(r, v);
    }
    const q = Array.from({ length: 13 }, rand);
    const { scores } = index.scanAll(q);
    const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    for (const r of [0, 1, 999, 2499]) {
      const row = rows[r]!;
      const expected = row.reduce((s, x, i) => s + x * q[i]!, 0) / (norm(row) * norm(q));
      expect(scores[r]).toBeCloseTo(expected, 5);
    }
    expect(index.count).toBe(2500);
  });

  it('forgets a deleted vector and reuses its slot', () => {
    const index = new FlatVectorIndex(8);
    index.set(0, [1, 0, 0, 0, 0, 0, 0, 0]);
    index.set(1, [0, 1, 0, 0, 0, 0, 0, 0]);
    index.delete(0);
    expect(index.has(0)).toBe(false);
    expect(index.scanAll([1, 0, 0, 0, 0, 0, 0, 0]).scores[0]).toBe(0);
    index.set(0, [0, 0, 3, 0, 0, 0, 0, 0]);
    expect(index.scanAll([0, 0, 1, 0, 0, 0, 0, 0]).scores[0]).toBeCloseTo(1, 6);
  });

  it('refuses vectors of the wrong size or with no direction', () => {
    const index = new FlatVectorIndex(4);
    expect(() => index.set(0, [1, 2, 3])).toThrow(/4-dimension/);
    expect(() => index.set(0, [0, 0, 0, 0])).toThrow(/non-zero/);
    expect(() => index.set(0, [Number.NaN, 0, 0, 1])).toThrow(/finite/);
    expect(index.count).toBe(0);
  });
});
