import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { Principal } from '../src/auth/accounts.js';
import { CredentialCache } from '../src/auth/credential-cache.js';
import { RedisInvalidationBus } from '../src/auth/redis-invalidation.js';
import { eventually } from '@farebox/test-kit';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const principal = (userId: string, keyId: string): Principal => ({
  user: { id: userId, email: `${userId}@example.com`, walletAddress: 'GW', isPublisher: false, publisherName: null, createdAt: new Date(0) },
  via: 'api_key',
  credentialId: keyId,
});

describe('credential invalidation over Redis', () => {
  const ra = new Redis(url, { maxRetriesPerRequest: 1 });
  const rb = new Redis(url, { maxRetriesPerRequest: 1 });
  const a = new CredentialCache({ bus: new RedisInvalidationBus(ra) });
  const b = new CredentialCache({ bus: new RedisInvalidationBus(rb) });
  afterAll(() => {
    a.close();
    b.close();
    ra.disconnect();
    rb.disconnect();
  });

  it('a revocation on one gateway drops the key on the other', async () => {
    await eventually('both buses subscribed', () => a.enabled && b.enabled, { intervalMs: 10 });
    const keyId = `k_${process.pid}_${Date.now()}`;
    b.set('hash-1', principal('u1', keyId), keyId, Date.now(), b.generation());
    b.set('hash-2', principal('u2', `${keyId}_other`), `${keyId}_other`, Date.now(), b.generation());
    expect(b.get('hash-1')).toBeDefined();
    a.invalidate({ keyId });
    await eventually('B drops the revoked key', () => b.get('hash-1') === undefined, { intervalMs: 10 });
    expect(b.get('hash-2')).toBeDefined();
  });

  it('serves nothing while its subscription is down, and again once it is back', async () => {
    await eventually('B subscribed', () => b.enabled, { intervalMs: 10 });
    b.set('hash-3', principal('u3', 'k3'), 'k3', Date.now(), b.generation());
    // Kill the subscriber connection from the server side.
    const clients = String(await ra.client('LIST'))
      .split('\n')
      .filter((l) => l.includes('cmd=subscribe') || l.includes('sub=1'));
    expect(clients.length).toBeGreaterThan(0);
    for (const line of clients) await ra.client('KILL', 'ID', line.match(/id=(\d+)/)![1]!);
    await eventually('B stops serving', () => !b.enabled || b.get('hash-3') === undefined, { intervalMs: 10 });
    expect(b.get('hash-3')).toBeUndefined();
    await eventually('B subscribed', () => b.enabled, { intervalMs: 10 });
    b.set('hash-3', principal('u3', 'k3'), 'k3', Date.now(), b.generation());
    expect(b.get('hash-3')).toBeDefined();
  });
});
