import { ConfigError } from '@farebox/protocol';
import { describe, expect, it } from 'vitest';
import { loadDiscoveryConfig } from '../src/index.js';

const problems = (env: Record<string, string>) => {
  try {
    loadDiscoveryConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  return [];
};

describe('farebox-discovery settings', () => {
  it('follows testnet by default, reads STELLAR_NETWORK (FAREBOX_NETWORK as an alias) and its own settings', () => {
    expect(loadDiscoveryConfig({})).toMatchObject({
      network: 'testnet',
      port: 8790,
      pollIntervalMs: 100,
      snapshotIntervalMs: 30_000,
      rateLimitPerMinute: 600,
      vectorIndex: 'hnsw',
      trustProxy: false,
    });
    expect(loadDiscoveryConfig({ FAREBOX_NETWORK: 'mainnet' }).network).toBe('mainnet');
    expect(
      loadDiscoveryConfig({
        STELLAR_NETWORK: 'local',
        FAREBOX_DEVNET_URL: 'http://127.0.0.1:8787/devnet/',
        FAREBOX_DISCOVERY_POLL_MS: '50',
        FAREBOX_DISCOVERY_RATE_LIMIT: '0',
        FAREBOX_TRUST_PROXY: '1',
        FAREBOX_DISCOVERY_VECTOR_INDEX: 'flat',
      }),
    ).toMatchObject({
      network: 'local',
      devnetUrl: 'http://127.0.0.1:8787/devnet',
      pollIntervalMs: 50,
      rateLimitPerMinute: 0,
      trustProxy: true,
      vectorIndex: 'flat',
    });
  });

  it('refuses bad settings, every problem at once', () => {
    expect(problems({ STELLAR_NETWORK: 'local' })).toEqual([
      'FAREBOX_DEVNET_URL required on the local network (the devnet to follow, e.g. http://127.0.0.1:8787/devnet)',
    ]);
    expect(problems({ STELLAR_NETWORK: 'testnet', FAREBOX_NETWORK: 'mainnet', FAREBOX_DISCOVERY_POLL_MS: '5', FAREBOX_DISCOVERY_VECTOR_INDEX: 'ivf' })).toEqual(
      [
        'STELLAR_NETWORK (testnet) and FAREBOX_NETWORK (mainnet) disagree: set STELLAR_NETWORK only',
        'FAREBOX_DISCOVERY_VECTOR_INDEX must be hnsw or flat, got "ivf"',
        'FAREBOX_DISCOVERY_POLL_MS must be an integer >= 10, got "5"',
      ],
    );
  });
});
