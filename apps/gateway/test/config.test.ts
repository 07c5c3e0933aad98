import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import { configFromEnv, loadConfig } from '../src/config.js';
import { freePort, spawnGateway, type GatewayProcess } from './process-kit.js';
import { eventually } from '@farebox/test-kit';

const spawned: GatewayProcess[] = [];
afterAll(() => {
  for (const p of spawned) p.child.kill('SIGKILL');
});

describe('loadConfig: the gateway host reads its environment once', () => {
  it('takes the listen address, the log settings and the network, and passes the rest on', () => {
    const env = {
      HOST: '0.0.0.0',
      PORT: '9000',
      FAREBOX_LOG_LEVEL: 'debug',
      FAREBOX_LOG_PRETTY: 'false',
      STELLAR_NETWORK: 'local',
      FAREBOX_SIGNUP_CREDIT: '1',
    };
    const c = loadConfig(env, true);
    expect(c.options).toMatchObject({ host: '0.0.0.0', port: 9000 });
    expect(c.options.env).toBe(env);
    expect(c.network).toBe('local');
    expect(c.log).toEqual({ level: 'debug', pretty: false, colors: false });
    expect(loadConfig({}, true)).toMatchObject({ network: 'testnet', log: { level: 'info', pretty: true } });
    expect(loadConfig({ FAREBOX_NETWORK: 'mainnet' }).network).toBe('mainnet');
    expect(loadConfig({ FAREBOX_LOG_LEVEL: 'loud' }).log.level).toBeUndefined();
  });
});

// configFromEnv: the environment into the gateway's one typed, validated configuration (gateway-core takes options only).
const KEY = { FAREBOX_KEYSTORE_KEY: 'a'.repeat(64) };
const LOCAL = { STELLAR_NETWORK: 'local' };

function problems(env: Record<string, string>, options: Parameters<typeof configFromEnv>[1] = {}): string[] {
  try {
    configFromEnv(env, options);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('configFromEnv: real-money defaults', () => {
  it('the search model is never downloaded unless FAREBOX_ALLOW_MODEL_DOWNLOAD=true (npm start and farebox dev set it), and logs are JSON lines off a terminal', () => {
    expect(configFromEnv(LOCAL).allowModelDownload).toBe(false);
    expect(configFromEnv({ ...KEY }).allowModelDownload).toBe(false);
    expect(configFromEnv({ ...LOCAL, FAREBOX_MODEL_DIR: '/models' })).toMatchObject({ modelDir: '/models', allowModelDownload: false });
    expect(configFromEnv({ ...LOCAL, FAREBOX_ALLOW_MODEL_DOWNLOAD: 'yes' }).allowModelDownload).toBe(false);
    expect(configFromEnv({ ...LOCAL, FAREBOX_ALLOW_MODEL_DOWNLOAD: 'true' }).allowModelDownload).toBe(true);
    expect(loadConfig({}).log.pretty).toBe(false);
  });

  it('local: free top-ups on, loopback endpoints off unless asked, 5 USD sign-up credit', () => {
    const c = configFromEnv(LOCAL);
    expect(c).toMatchObject({ network: 'local', freeTopups: true, allowLoopbackEndpoints: false, signupCredit: 50_000_000n });
    expect(configFromEnv({ ...LOCAL, FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: 'true' }).allowLoopbackEndpoints).toBe(true);
  });

  it('one network variable, STELLAR_NETWORK, with one default: testnet; FAREBOX_NETWORK still works but warns', () => {
    expect(configFromEnv(KEY)).toMatchObject({ network: 'testnet', freeTopups: false, warnings: [] });
    expect(configFromEnv({ STELLAR_NETWORK: 'local' })).toMatchObject({ network: 'local', warnings: [] });
    expect(configFromEnv({ FAREBOX_NETWORK: 'local' })).toMatchObject({
      network: 'local',
      warnings: ['FAREBOX_NETWORK is deprecated: set STELLAR_NETWORK instead (same values)'],
    });
    expect(configFromEnv({ STELLAR_NETWORK: 'local', FAREBOX_NETWORK: 'local' }).network).toBe('local');
    expect(problems({ STELLAR_NETWORK: 'local', FAREBOX_NETWORK: 'mainnet' })).toEqual([
      'STELLAR_NETWORK=local and the deprecated FAREBOX_NETWORK=mainnet disagree: remove FAREBOX_NETWORK',
    ]);
    expect(problems({ STELLAR_NETWORK: 'devnet' })).toContain('network must be local, testnet or mainnet');
    // An option wins over the environment, without a warning.
    expect(configFromEnv({ FAREBOX_NETWORK: 'testnet' }, { network: 'local' })).toMatchObject({ network: 'local', warnings: [] });
  });

  it('testnet: top-ups are paid unless FAREBOX_FREE_TOPUPS=true, and the keystore key must come from the environment', () => {
    expect(configFromEnv({ STELLAR_NETWORK: 'testnet', ...KEY }).freeTopups).toBe(false);
    expect(configFromEnv({ STELLAR_NETWORK: 'testnet', FAREBOX_FREE_TOPUPS: 'true', ...KEY }).freeTopups).toBe(true);
    expect(problems({ STELLAR_NETWORK: 'testnet' })).toEqual([
      'testnet needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them',
    ]);
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
    const c = configFromEnv({
      STELLAR_NETWORK: 'mainnet',
      DATABASE_URL: 'postgres://db.internal/farebox',
      FAREBOX_BASE_URL: 'https://farebox.example',
      FAREBOX_SIGNUP_CREDIT: '0',
      ...KEY,
    });
    expect(c).toMatchObject({ network: 'mainnet', freeTopups: false, allowLoopbackEndpoints: false, signupCredit: 0n, allowedHosts: ['farebox.example'] });
    expect(
      problems({
        STELLAR_NETWORK: 'mainnet',
        FAREBOX_ALLOW_EMBEDDED_DB: 'true',
        FAREBOX_BASE_URL: 'https://farebox.example',
        FAREBOX_SIGNUP_CREDIT: '0.5',
        ...KEY,
      }),
    ).toEqual([]);
  });

  it('refuses malformed settings with their names', () => {
    expect(problems({ ...LOCAL, FAREBOX_SIGNUP_CREDIT: '-1', FAREBOX_FREE_TOPUPS: 'yes', FAREBOX_ALLOWED_HOSTS: 'ok.example, bad host/x' })).toEqual([
      'FAREBOX_FREE_TOPUPS must be true or false',
      'FAREBOX_SIGNUP_CREDIT must be a USD amount from 0 to 1000 (at most 7 decimals)',
      'FAREBOX_ALLOWED_HOSTS: "bad host/x" is not a host[:port]',
    ]);
    expect(configFromEnv({ ...LOCAL, FAREBOX_SIGNUP_CREDIT: '2.5', FAREBOX_ALLOWED_HOSTS: 'Farebox.Example:8443, [::1]:8787' })).toMatchObject({
      signupCredit: 25_000_000n,
      allowedHosts: ['127.0.0.1:8787', 'farebox.example:8443', '[::1]:8787'],
    });
  });

  it('FAREBOX_READY_REQUIRES: the dependencies that fail readiness besides the database, each known and used by this gateway', () => {
    expect(configFromEnv(LOCAL).readyRequires).toEqual([]);
    expect(configFromEnv({ ...LOCAL, FAREBOX_REDIS_URL: 'redis://127.0.0.1:6379', FAREBOX_READY_REQUIRES: 'Redis, rpc,database,rpc' }).readyRequires).toEqual([
      'redis',
      'rpc',
    ]);
    expect(problems({ ...LOCAL, FAREBOX_READY_REQUIRES: 'rpc,postgres,redis' })).toEqual([
      'FAREBOX_READY_REQUIRES: unknown dependency "postgres" (one of redis, rpc, horizon, catalog, discovery, model, escrow)',
      'FAREBOX_READY_REQUIRES names redis, which this gateway does not use (set FAREBOX_REDIS_URL)',
    ]);
  });

  it('reads every part once, the settlement network, settlement, operators and the stores included, and reports their problems together', () => {
    expect(
      problems({
        ...LOCAL,
        FAREBOX_CALL_TIMEOUT_MS: 'soon',
        STELLAR_RPC_URL: 'ftp://rpc',
        FAREBOX_ESCROW_BUDGET: '50',
        FAREBOX_TREASURY_AUTOFUND: 'maybe',
        FAREBOX_OPERATORS: 'nobody',
        FAREBOX_DISPUTE_INTERVAL: 'x',
      }),
    ).toEqual([
      // The malformed values first, in the order docs/configuration.md lists them; then what the parts find.
      'callTimeoutMs must be an integer >= 1',
      'FAREBOX_TREASURY_AUTOFUND must be true or false',
      'rpcUrl must be an http(s) URL, got ftp://rpc',
      'FAREBOX_ESCROW_BUDGET must be requests/windowMs, e.g. 50/60000',
      'FAREBOX_OPERATORS: "nobody" is not an account id (acct_…)',
      'FAREBOX_DISPUTE_INTERVAL must be a duration such as 500ms, 10s, 5m or 1h (a bare number is seconds)',
    ]);
    const c = configFromEnv(
      {
        ...LOCAL,
        FAREBOX_REDIS_URL: 'redis://r:6379',
        FAREBOX_DISCOVERY_URL: 'http://d:8790',
        FAREBOX_MODEL_DIR: '/models/e5',
        FAREBOX_ALLOW_MODEL_DOWNLOAD: 'true',
        FAREBOX_MCP_ALLOWED_ORIGINS: 'https://a.example, https://b.example',
        FAREBOX_PLATFORM_SECRET: 'S-platform',
        TRUSTLESS_WORK_URL: 'https://escrow.example/',
        FAREBOX_SETTLEMENT_INTERVAL: '5m',
        FAREBOX_OPERATORS: 'acct_abcdefgh1234',
        STELLAR_EXPLORER_URL: 'https://explorer.example',
      },
      { settlement: { settlementInterval: '10s' } },
    );
    expect(c).toMatchObject({
      redisUrl: 'redis://r:6379',
      discoveryUrl: 'http://d:8790',
      modelDir: '/models/e5',
      allowModelDownload: true,
      mcpAllowedOrigins: ['https://a.example', 'https://b.example'],
      secrets: { platformSecret: 'S-platform', keystoreKey: undefined, treasurySecret: undefined },
      // The option wins over its variable; the other variables still count.
      settlement: { settlementIntervalMs: 10_000, escrowUrl: 'https://escrow.example' },
    });
    expect([...c.operators.operators]).toEqual(['acct_abcdefgh1234']);
    expect(c.stellar.explorer.tx('abc')).toBe('https://explorer.example/tx/abc');
  });

  it('reads how long a charged call waits for an unreachable database (FAREBOX_DB_OUTAGE_WAIT_MS, 15 s by default; 0 answers at once)', () => {
    expect(configFromEnv(LOCAL).dbOutageWaitMs).toBe(15_000);
    expect(configFromEnv({ ...LOCAL, FAREBOX_DB_OUTAGE_WAIT_MS: '2500' }).dbOutageWaitMs).toBe(2_500);
    expect(configFromEnv({ ...LOCAL, FAREBOX_DB_OUTAGE_WAIT_MS: '0' }).dbOutageWaitMs).toBe(0);
    expect(problems({ ...LOCAL, FAREBOX_DB_OUTAGE_WAIT_MS: 'a while' })).toEqual(['dbOutageWaitMs must be an integer >= 0']);
  });

  it('reads the x402 facilitator settings (FAREBOX_X402_*), an option winning over its variable', () => {
    const c = configFromEnv(
      { ...LOCAL, FAREBOX_X402_FACILITATOR: 'false', FAREBOX_X402_PAYER_DAILY_FEE_STROOPS: '250000', FAREBOX_X402_PAYER_RATE_LIMIT: '9' },
      { x402: { payerPerMinute: 12 } },
    );
    expect(c.x402).toMatchObject({ enabled: false, payerDailyFeeStroops: 250_000n, dailyFeeStroops: 100_000_000n, rateLimits: { payer: { limit: 12 } } });
    expect(problems({ ...LOCAL, FAREBOX_X402_FACILITATOR: 'maybe', FAREBOX_X402_MAX_FEE_STROOPS: '-1' })).toEqual([
      'FAREBOX_X402_FACILITATOR must be true or false',
      'FAREBOX_X402_MAX_FEE_STROOPS must be a whole number of stroops >= 1',
    ]);
    const channels = configFromEnv({ ...LOCAL, FAREBOX_X402_CHANNELS: '3', FAREBOX_X402_CHANNEL_STROOPS: '30000000', FAREBOX_X402_PAYER_CONCURRENCY: '1' });
    expect(channels.x402).toMatchObject({ channels: 3, channelStroops: 30_000_000n, payerConcurrency: 1 });
    // What payers with no settled payment may hold of the day's sponsored fees, in all and per service.
    const newcomers = configFromEnv({
      ...LOCAL,
      FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS: '5000000',
      FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS: '400000',
    });
    expect(newcomers.x402).toMatchObject({ newPayerDailyFeeStroops: 5_000_000n, serviceNewPayerDailyFeeStroops: 400_000n });
    expect(problems({ ...LOCAL, FAREBOX_X402_CHANNELS: '65' })).toEqual(['FAREBOX_X402_CHANNELS must be an integer from 1 to 64']);
  });
});

describe('farebox-gateway and its one network variable', () => {
  it('runs on testnet when no network is named (and so wants a keystore key)', async () => {
    const p = spawnGateway({ PORT: String(await freePort()), FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-net-')), STELLAR_NETWORK: '' });
    spawned.push(p);
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain('testnet needs FAREBOX_KEYSTORE_KEY');
  });

  it('still honours the deprecated FAREBOX_NETWORK, and says so at start', async () => {
    const p = spawnGateway({
      PORT: String(await freePort()),
      FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-net-')),
      FAREBOX_NETWORK: 'local',
      FAREBOX_LOG_LEVEL: 'warn',
    });
    spawned.push(p);
    const url = await p.started;
    expect((await (await fetch(`${url}/v1/platform/key`)).json()).network).toBe('local');
    // Log lines are written in batches (at most 100 ms late).
    const said = 'FAREBOX_NETWORK is deprecated: set STELLAR_NETWORK instead (same values)';
    await eventually('the warning is logged', () => p.output().includes(said), { timeoutMs: 5_000 });
  });
});
