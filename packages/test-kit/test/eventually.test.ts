import { describe, expect, it } from 'vitest';
import { eventually } from '../src/index.js';

describe('eventually', () => {
  it('answers the first truthy value', async () => {
    let n = 0;
    expect(await eventually('n reaches 3', () => (++n >= 3 ? n : 0), { intervalMs: 1 })).toBe(3);
  });

  it('names what it waited for and the last error when the deadline passes', async () => {
    await expect(
      eventually(
        'the service answers',
        () => {
          throw new Error('ECONNREFUSED');
        },
        { timeoutMs: 30, intervalMs: 5 },
      ),
    ).rejects.toThrow('not within 30 ms: the service answers (last error: ECONNREFUSED)');
    await expect(eventually('a flag', () => false, { timeoutMs: 20, intervalMs: 5 })).rejects.toThrow('not within 20 ms: a flag (last value: false)');
  });
});
