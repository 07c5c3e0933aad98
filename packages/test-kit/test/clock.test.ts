import { describe, expect, it } from 'vitest';
import { testClock } from '../src/index.js';

describe('testClock', () => {
  it('is the machine time until moved, then ahead by exactly what was skipped', () => {
    const clock = testClock();
    const { now } = clock;
    let before = Date.now();
    let t = now();
    expect(t).toBeGreaterThanOrEqual(before);
    expect(t).toBeLessThanOrEqual(Date.now());
    clock.advance(3_600_000);
    before = Date.now();
    t = now();
    expect(t).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(t).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect(() => clock.advance(-1)).toThrow('a clock moves forward');
  });
});
