import { describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import { resolveGatewayConfig } from '../src/config.js';

const KEY = { FAREBOX_KEYSTORE_KEY: 'a'.repeat(64) };
const LOCAL = { STELLAR_NETWORK: 'local' };

function problems(env: Record<string, string>, options: Parameters<typeof resolveGatewayConfig>[0] = {}): string[] {
  try {
    resolveGatewayConfig({ ...options, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('real-money defaults', () => {
  it('local: free top-ups on, loopback endpoints off unless asked, 5 USD sign-up credit', () => {
    const c = resolveGatewayConfig({ env: LOCAL });
    expect(c).toMatchObject({ network: 'local', freeTopups: true, allowLoopbackEndpoints: false, signupCredit: 50_000_000n });
    expect(resolveGatewayConfig({ env: { ...LOCAL, FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true' } }).allowLoopbackEndpoints).toBe(true);
  });

  it('one network variable, STELLAR_NETWORK, with one default: testnet; FAREBOX_NETWORK still works but warns', () => {
    expect(resolveGatewayConfig({ env: KEY })).toMatchObject({ network: 'testnet', freeTopups: false, warnings: [] });
    expect(resolveGatewayConfig({ env: { STELLAR_NETWORK: 'local' } })).toMatchObject({ network: 'local', warnings: [] });
    expect(resolveGatewayConfig({ env: { FAREBOX_NETWORK: 'local' } })).toMatchObject({
      network: 'local',
      warnings: ['FAREBOX_NETWORK is deprecated: set STELLAR_NETWORK instead (same values)'],
    });
    expect(resolveGatewayConfig({ env: { STELLAR_NETWORK: 'local', FAREBOX_NETWORK: 'local' } }).network).toBe('local');
    expect(problems({ STELLAR_NETWORK: 'local', FAREBOX_NETWORK: 'mainnet' })).toEqual(['STELLAR_NETWORK=local and the deprecated FAREBOX_NETWORK=mainnet disagree: remove FAREBOX_NETWORK']);
    expect(problems({ STELLAR_NETWORK: 'devnet' })).toContain('network must be local, testnet or mainnet');
    // An option wins over the environment, without a warning.
    expect(resolveGatewayConfig({ network: 'local', env: { FAREBOX_NETWORK: 'testnet' } })).toMatchObject({ network: 'local', warnings: [] });
  });

  it('testnet: top-ups are paid unless FAREBOX_FREE_TOPUPS=true, and the keystore key must come from the environment', () => {
    expect(resolveGatewayConfig({ env: { STELLAR_NETWORK: 'testnet', ...KEY } }).freeTopups).toBe(false);
    expect(resolveGatewayConfig({ env: { STELLAR_NETWORK: 'testnet', FAREBOX_FREE_TOPUPS: 'true', ...KEY } }).freeTopups).toBe(true);
    expect(problems({ STELLAR_NETWORK: 'testnet' })).toEqual(['testnet needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them']);
  });

  it('mainnet: every unsafe setting is named at once', () => {
    const found = problems({ STELLAR_NETWORK: 'mainnet', FAREBOX_FREE_TOPUPS: 'true', FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true' });
    expect(found).toEqual([
      'mainnet needs DATABASE_URL (a PostgreSQL server): embedded PGlite runs without fsync; set FAREBOX_ALLOW_EMBEDDED_DB=true to accept that',
      'mainnet needs an https FAREBOX_BASE_URL (session cookies and OAuth redirects travel over it)',
      'FAREBOX_FREE_TOPUPS=true is refused on mainnet: top-ups must be paid on chain',
      'FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true is refused on mainnet',
      'mainnet needs FAREBOX_SIGNUP_CREDIT set explicitly (USD given to each new account; 0 allowed)',
      'mainnet needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them',
    ]);
  });

  it('mainnet: a safe configuration starts, with the sign-up credit it names (0 allowed)', () => {
    const c = resolveGatewayConfig({
      env: { STELLAR_NETWORK: 'mainnet', DATABASE_URL: 'postgres://db.internal/farebox', FAREBOX_BASE_URL: 'https://farebox.example', FAREBOX_SIGNUP_CREDIT: '0', ...KEY },
    });
    expect(c).toMatchObject({ network: 'mainnet', freeTopups: false, allowLoopbackEndpoints: false, signupCredit: 0n, allowedHosts: ['farebox.example'] });
    expect(problems({ STELLAR_NETWORK: 'mainnet', FAREBOX_ALLOW_EMBEDDED_DB: 'true', FAREBOX_BASE_URL: 'https://farebox.example', FAREBOX_SIGNUP_CREDIT: '0.5', ...KEY })).toEqual([]);
  });

  it('refuses malformed settings with their names', () => {
    expect(problems({ ...LOCAL, FAREBOX_SIGNUP_CREDIT: '-1', FAREBOX_FREE_TOPUPS: 'yes', FAREBOX_ALLOWED_HOSTS: 'ok.example, bad host/x' })).toEqual([
      'FAREBOX_FREE_TOPUPS must be true or false',
      'FAREBOX_SIGNUP_CREDIT must be a USD amount from 0 to 1000 (at most 7 decimals)',
      'FAREBOX_ALLOWED_HOSTS: "bad host/x" is not a host[:port]',
    ]);
    expect(resolveGatewayConfig({ env: { ...LOCAL, FAREBOX_SIGNUP_CREDIT: '2.5', FAREBOX_ALLOWED_HOSTS: 'Farebox.Example:8443, [::1]:8787' } })).toMatchObject({
      signupCredit: 25_000_000n,
      allowedHosts: ['127.0.0.1:8787', 'farebox.example:8443', '[::1]:8787'],
    });
  });
});
