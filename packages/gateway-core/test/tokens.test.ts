import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../src/auth/passwords.js';
import { API_KEY_PREFIX, generateApiKey, hashToken, isWellFormedApiKey } from '../src/auth/tokens.js';

describe('API keys', () => {
  it('are sk_live_ + 43 base62 characters + a 6-character checksum', () => {
    const { key, prefix } = generateApiKey();
    expect(key).toMatch(/^sk_live_[0-9A-Za-z]{49}$/);
    expect(prefix).toBe(key.slice(0, 14));
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('detect a typo through the checksum', () => {
    const { key } = generateApiKey();
    const i = 20;
    const typo = key.slice(0, i) + (key[i] === 'a' ? 'b' : 'a') + key.slice(i + 1);
    expect(isWellFormedApiKey(typo)).toBe(false);
    expect(isWellFormedApiKey('sk_live_short')).toBe(false);
  });

  it('made by earlier releases stay well-formed (the same CRC-32 checksum)', () => {
    // Bodies and the checksums the first release computed for them (assembled here: no key-shaped literal).
    const made = [
      ['0'.repeat(43), '2CZclj'],
      [`${'Farebox'.repeat(6)}x`, '4NPCUm'],
      [`${'zZ9'.repeat(14)}q`, '2tLD1J'],
      [`${'0'.repeat(42)}A`, '1kCDdV'],
    ];
    for (const [body, sum] of made) {
      expect(isWellFormedApiKey(`${API_KEY_PREFIX}${body}${sum}`)).toBe(true);
      expect(isWellFormedApiKey(`${API_KEY_PREFIX}${body}${sum!.slice(0, 5)}0`)).toBe(false);
    }
  });

  it('are unique and hashed with SHA-256', () => {
    const keys = new Set(Array.from({ length: 100 }, () => generateApiKey().key));
    expect(keys.size).toBe(100);
    const [k] = keys;
    expect(hashToken(k!)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('passwords', () => {
  it('verify only the right password, and never store it', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(hash).not.toContain('correct');
    expect(hash.startsWith('scrypt$32768$8$1$')).toBe(true);
    expect(await verifyPassword('correct horse battery staple', hash)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', hash)).toBe(false);
    expect(await verifyPassword('x', 'garbage')).toBe(false);
  });
});
