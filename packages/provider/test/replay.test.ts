import { describe, expect, it } from 'vitest';
import { InMemoryReplayStore } from '../src/index.js';

describe('InMemoryReplayStore', () => {
  it('answers true for a new nonce and false for a nonce it still remembers', async () => {
    const store = new InMemoryReplayStore();
    const until = Math.floor(Date.now() / 1000) + 60;
    expect(await store.checkAndRemember('n1', until)).toBe(true);
    expect(await store.checkAndRemember('n1', until)).toBe(false);
    expect(await store.checkAndRemember('n2', until)).toBe(true);
  });

  it('keeps a nonce until the second it was asked to keep it, inclusive', async () => {
    let now = 1_000_000_000;
    const store = new InMemoryReplayStore({ now: () => now });
    const until = now / 1000 + 180;
    await store.checkAndRemember('n', until);
    now += 180_000;
    expect(await store.checkAndRemember('n', until)).toBe(false);
    now += 1_000;
    expect(await store.checkAndRemember('n', until + 500)).toBe(true);
  });

  it('prunes expired nonces so memory follows the acceptance window', async () => {
    let now = 2_000_000_000;
    const store = new InMemoryReplayStore({ now: () => now });
    for (let i = 0; i < 5000; i++) await store.checkAndRemember(`old-${i}`, now / 1000 + 10);
    expect(store.size).toBe(5000);
    now += 20_000;
    await store.checkAndRemember('fresh', now / 1000 + 10);
    expect(store.size).toBe(1);
  });
});
