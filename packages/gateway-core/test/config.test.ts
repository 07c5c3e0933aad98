import { describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import { resolveGatewayConfig, type GatewayOptions } from '../src/config.js';

// gateway-core takes typed options only: the host reads its environment into
// them (apps/gateway/src/config.ts, configFromEnv; its tests check the
// variables). Messages name the variables, which is what an operator sets.
const KEY = { keystoreKey: 'a'.repeat(64) };
const LOCAL = { network: 'local' } as const;

function problems(options: GatewayOptions): string[] {
  try {
    resolveGatewayConfig(options);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('real-money defaults', () => {
  it('local: free top-ups on, loopback endpoints off unless asked, 5 USD sign-up credit', () => {
    expect(resolveGatewayConfig(LOCAL)).toMatchObject({
      network: 'local',
      freeTopups: true,
      allowLoopbackEndpoints: false,
      signupCredit: 50_000_000n,
      warnings: [],
    });
    expect(resolveGatewayConfig({ ...LOCAL, allowLoopbackEndpoints: true }).allowLoopbackEndpoints).toBe(true);
  });

  it('one default network: testnet, where top-ups are paid and the keystore key must be given', () => {
    expect(resolveGatewayConfig(KEY)).toMatchObject({ network: 'testnet', freeTopups: false });
    expect(resolveGatewayConfig({ network: 'testnet', freeTopups: true, ...KEY }).freeTopups).toBe(true);
    expect(problems({ network: 'testnet' })).toEqual([
      'testnet needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them',
    ]);
    // A host that brings its own wallet provider needs no key.
    expect(problems({ network: 'testnet', keystoreKeyProvided: true })).toEqual([]);
    expect(problems({ network: 'devnet' as never })).toContain('network must be local, testnet or mainnet');
  });

  it('mainnet: every unsafe setting is named at once', () => {
    expect(problems({ network: 'mainnet', freeTopups: true, allowLoopbackEndpoints: true })).toEqual([
      'mainnet needs DATABASE_URL (a PostgreSQL server): embedded PGlite runs without fsync; set FAREBOX_ALLOW_EMBEDDED_DB=true to accept that',
      'mainnet needs an https FAREBOX_BASE_URL (session cookies and OAuth redirects travel over it)',
      'FAREBOX_FREE_TOPUPS=true is refused on mainnet: top-ups must be paid on chain',
      'FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true is refused on mainnet',
      'mainnet needs FAREBOX_SIGNUP_CREDIT set explicitly (USD given to each new account; 0 allowed)',
      'mainnet needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them',
    ]);
    const c = resolveGatewayConfig({
      network: 'mainnet',
      databaseUrl: 'postgres://db.internal/farebox',
      baseUrl: 'https://farebox.example',
      signupCredit: 0,
      ...KEY,
    });
    expect(c).toMatchObject({ network: 'mainnet', freeTopups: false, signupCredit: 0n, allowedHosts: ['farebox.example'] });
    expect(c.stellar.name).toBe('mainnet');
  });

  it('every part is checked together: the gateway, the settlement network, settlement and the operators', () => {
    expect(
      problems({
        ...LOCAL,
        signupCredit: '-1',
        keystoreKey: 'short',
        stellar: { rpcUrl: 'ftp://rpc.example' },
        settlement: { fundingInterval: 'soon', escrowBudget: '50' },
        operators: { operators: 'ops@example.com', disputeAutoRefundMinutes: 'later' },
      }),
    ).toEqual([
      'FAREBOX_SIGNUP_CREDIT must be a USD amount from 0 to 1000 (at most 7 decimals)',
      'FAREBOX_KEYSTORE_KEY must be 32 bytes, as 64 hex characters or base64',
      'rpcUrl must be an http(s) URL, got ftp://rpc.example',
      'FAREBOX_FUNDING_INTERVAL must be a duration such as 500ms, 10s, 5m or 1h (a bare number is seconds)',
      'FAREBOX_ESCROW_BUDGET must be requests/windowMs, e.g. 50/60000',
      'FAREBOX_OPERATORS: "ops@example.com" is an e-mail address; operators are named by account id (acct_…, the id of /v1/me), or granted with `farebox operator grant` once they have an account',
      'FAREBOX_DISPUTE_AUTO_REFUND_MINUTES must be a number of minutes (0 = at once) or off',
    ]);
  });

  it('resolves each part once, into the one configuration object', () => {
    const c = resolveGatewayConfig({
      ...LOCAL,
      baseUrl: 'http://127.0.0.1:9000',
      settlement: { settlementInterval: '5m', escrowBudget: '10/1000', treasuryAutofund: false },
      operators: { operators: ['acct_abcdefgh1234'], disputeAutoRefundMinutes: 'off', disputeInterval: 2 },
      mcpAllowedOrigins: [' https://app.example ', ''],
      redisUrl: 'redis://127.0.0.1:6379',
      allowedHosts: ['Farebox.Example:8443', ' [::1]:8787'],
    });
    expect(c).toMatchObject({
      devnetUrl: 'http://127.0.0.1:9000/devnet',
      settlement: {
        settlementIntervalMs: 300_000,
        fundingIntervalMs: 10_000,
        escrowUrl: 'http://127.0.0.1:9000/devnet/escrow',
        escrowApiKey: 'farebox-devnet',
        escrowBudget: { requests: 10, windowMs: 1000 },
        treasuryAutofund: false,
      },
      operators: { autoRefundAfterMs: null, disputeIntervalMs: 2000 },
      mcpAllowedOrigins: ['https://app.example'],
      redisUrl: 'redis://127.0.0.1:6379',
      discoveryUrl: undefined,
      allowedHosts: ['127.0.0.1:9000', 'farebox.example:8443', '[::1]:8787'],
    });
    expect([...c.operators.operators]).toEqual(['acct_abcdefgh1234']);
    expect(c.stellar).toMatchObject({ name: 'local', horizonUrl: 'http://127.0.0.1:9000/devnet' });
  });
});
