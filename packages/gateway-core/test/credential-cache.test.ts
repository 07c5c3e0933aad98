import { describe, expect, it } from 'vitest';
import type { Principal } from '../src/auth/accounts.js';
import { CredentialCache, type Invalidation, type InvalidationBus } from '../src/auth/credential-cache.js';

const principal = (userId: string, keyId: string, isPublisher = false): Principal => ({
  user: { id: userId, email: `${userId}@example.com`, walletAddress: 'GW', isPublisher, publisherName: null, createdAt: new Date(0) },
  via: 'api_key',
  credentialId: keyId,
});

/** An in-process bus between caches, with a switch to cut the connection. */
function busPair() {
  const listeners: Array<{ onMessage: (m: Invalidation) => void; onGap: () => void; bus: TestBus }> = [];
  class TestBus implements InvalidationBus {
    live = true;
    publish(message: Invalidation) {
      for (const l of listeners) if (l.bus !== this && l.bus.live) l.onMessage(message);
    }
    subscribe(onMessage: (m: Invalidation) => void, onGap: () => void) {
      listeners.push({ onMessage, onGap, bus: this });
    }
    drop() {
      this.live = false;
      listeners.find((l) => l.bus === this)?.onGap();
    }
    close() {
      this.live = false;
    }
  }
  return [new TestBus(), new TestBus()] as const;
}

describe('credential cache', () => {
  it('serves a principal until its time is up, then asks the database again', () => {
    let now = 1_000_000;
    const cache = new CredentialCache({ ttlMs: 5_000, now: () => now });
    cache.set('h1', principal('u1', 'k1'), 'k1', now, cache.generation());
    expect(cache.get('h1')?.principal.user.id).toBe('u1');
    now += 4_999;
    expect(cache.get('h1')).toBeDefined();
    now += 1;
    expect(cache.get('h1')).toBeUndefined();
  });

  it('drops a revoked key and every key of a changed user at once', () => {
    const cache = new CredentialCache();
    const g = cache.generation();
    cache.set('h1', principal('u1', 'k1'), 'k1', Date.now(), g);
    cache.set('h2', principal('u1', 'k2'), 'k2', Date.now(), g);
    cache.set('h3', principal('u2', 'k3'), 'k3', Date.now(), g);
    cache.invalidate({ keyId: 'k1' });
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h2')).toBeDefined();
    cache.invalidate({ userId: 'u1' });
    expect(cache.get('h2')).toBeUndefined();
    expect(cache.get('h3')).toBeDefined();
  });

  it('does not keep a read that started before a revocation', () => {
    const cache = new CredentialCache();
    const before = cache.generation();
    // The database said "valid", but the key was revoked while the answer travelled.
    cache.invalidate({ keyId: 'k1' });
    cache.set('h1', principal('u1', 'k1'), 'k1', Date.now(), before);
    expect(cache.get('h1')).toBeUndefined();
  });

  it('asks for a last_used_at refresh at most once a minute', () => {
    let now = 10_000_000;
    const cache = new CredentialCache({ ttlMs: 60_000, now: () => now });
    cache.set('h1', principal('u1', 'k1'), 'k1', now - 61_000, cache.generation());
    expect(cache.get('h1')?.touch).toBe(true);
    expect(cache.get('h1')?.touch).toBe(false);
    now += 59_000;
    expect(cache.get('h1')?.touch).toBe(false);
  });

  it('tells the other instances, and serves nothing while it may miss what they say', () => {
    const [busA, busB] = busPair();
    const a = new CredentialCache({ bus: busA });
    const b = new CredentialCache({ bus: busB });
    b.set('h1', principal('u1', 'k1'), 'k1', Date.now(), b.generation());
    b.set('h2', principal('u2', 'k2'), 'k2', Date.now(), b.generation());
    a.invalidate({ keyId: 'k1' });
    expect(b.get('h1')).toBeUndefined();
    expect(b.get('h2')).toBeDefined();
    busB.drop();
    expect(b.get('h2')).toBeUndefined();
    b.set('h2', principal('u2', 'k2'), 'k2', Date.now(), b.generation());
    expect(b.get('h2')).toBeUndefined();
  });

  it('is off with a time of 0', () => {
    const cache = new CredentialCache({ ttlMs: 0 });
    cache.set('h1', principal('u1', 'k1'), 'k1', Date.now(), cache.generation());
    expect(cache.get('h1')).toBeUndefined();
  });

  it('keeps at most maxEntries, dropping the oldest', () => {
    const cache = new CredentialCache({ maxEntries: 2 });
    const g = cache.generation();
    cache.set('h1', principal('u1', 'k1'), 'k1', Date.now(), g);
    cache.set('h2', principal('u2', 'k2'), 'k2', Date.now(), g);
    cache.set('h3', principal('u3', 'k3'), 'k3', Date.now(), g);
    expect(cache.get('h1')).toBeUndefined();
    expect(cache.get('h2')).toBeDefined();
    expect(cache.get('h3')).toBeDefined();
  });
});
