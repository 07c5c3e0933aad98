import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '@farebox/protocol';
import { LOG_LEVELS, resolveGatewayConfig, type GatewayConfig } from '@farebox/gateway-core';
import { configFromEnv, loadConfig } from '../src/config.js';
import { GATEWAY_SETTINGS, LOG_LEVEL_NAMES } from '../src/settings.js';
import { spawnGateway, type GatewayProcess } from './process-kit.js';

// The gateway's settings are declared once (src/settings.ts: meaning, default, values, zod parse);
// docs/configuration.md is generated from that declaration (tests/configuration.test.ts).
const LOCAL = { STELLAR_NETWORK: 'local' };

function problems(env: Record<string, string>): string[] {
  try {
    configFromEnv(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

const spawned: GatewayProcess[] = [];
afterAll(() => {
  for (const p of spawned) p.child.kill('SIGKILL');
});

describe('the gateway settings schema', () => {
  it('names every malformed value at once, in the order of docs/configuration.md, with what the gateway finds besides', () => {
    expect(
      problems({
        ...LOCAL,
        PORT: 'eighty',
        FAREBOX_DB_POOL_SIZE: '0',
        FAREBOX_LOG_LEVEL: 'loud',
        FAREBOX_LOG_PRETTY: 'yes',
        FAREBOX_ANONYMOUS_RATE_LIMIT: '1.5',
        FAREBOX_ALLOW_EMBEDDED_DB: 'on',
        FAREBOX_X402_FACILITATOR: 'sometimes',
        FAREBOX_METRICS_TOKEN: 'short',
        FAREBOX_REDIS_URL: 'localhost:6379',
        FAREBOX_DISCOVERY_URL: 'discovery.internal',
      }),
    ).toEqual([
      'PORT must be an integer from 0 to 65535',
      'databasePoolSize must be an integer >= 1',
      'FAREBOX_REDIS_URL must be a redis:// or rediss:// URL',
      'FAREBOX_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent',
      'FAREBOX_LOG_PRETTY must be true or false',
      'anonymousPerMinute must be an integer >= 1',
      'FAREBOX_ALLOW_EMBEDDED_DB must be true or false',
      'FAREBOX_DISCOVERY_URL must be an http(s) URL, got "discovery.internal"',
      'FAREBOX_X402_FACILITATOR must be true or false',
      'FAREBOX_METRICS_TOKEN must be at least 16 characters',
    ]);
  });

  it('parses each value to its type: numbers, flags, lists and the proxy setting', () => {
    const c = configFromEnv({
      ...LOCAL,
      PORT: '9100',
      FAREBOX_DB_POOL_SIZE: '4',
      FAREBOX_CREDENTIAL_CACHE_MS: '0',
      FAREBOX_TRUST_PROXY: '2',
      FAREBOX_ALLOW_EMBEDDED_DB: 'false',
      FAREBOX_MCP_ALLOWED_ORIGINS: 'https://a.example,https://b.example',
      FAREBOX_AUTH_RATE_LIMIT: '7',
    });
    expect(c).toMatchObject({
      port: 9100,
      baseUrl: 'http://127.0.0.1:9100',
      databasePoolSize: 4,
      credentialCacheMs: 0,
      trustProxy: 2,
      mcpAllowedOrigins: ['https://a.example', 'https://b.example'],
      rateLimits: { auth: { limit: 7 } },
    });
    expect(configFromEnv({ ...LOCAL, FAREBOX_TRUST_PROXY: 'loopback, 10.0.0.0/8' }).trustProxy).toBe('loopback, 10.0.0.0/8');
    expect(configFromEnv({ ...LOCAL, FAREBOX_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ FAREBOX_LOG_PRETTY: 'true', NO_COLOR: '1' }, true).log).toEqual({ level: 'info', pretty: true, colors: false });
  });

  it('the defaults it declares are the ones the gateway runs with when nothing is set', () => {
    // gateway-core's own defaults (options only, no environment) against the environment's with nothing set.
    const core = resolveGatewayConfig({ network: 'local' });
    const env = configFromEnv(LOCAL);
    const field: Record<string, (c: GatewayConfig) => unknown> = {
      FAREBOX_DB_POOL_SIZE: (c) => c.databasePoolSize,
      FAREBOX_CREDENTIAL_CACHE_MS: (c) => c.credentialCacheMs,
      FAREBOX_CATALOG_STALE_MS: (c) => c.catalogStaleMs,
      FAREBOX_CALL_TIMEOUT_MS: (c) => c.callTimeoutMs,
      FAREBOX_DB_OUTAGE_WAIT_MS: (c) => c.dbOutageWaitMs,
      FAREBOX_LIVENESS_INTERVAL_MS: (c) => c.liveness.intervalMs,
      FAREBOX_MAX_PRICE_MULTIPLE: (c) => c.maxPriceMultiple,
      FAREBOX_AUTH_RATE_LIMIT: (c) => c.rateLimits.auth.limit,
      FAREBOX_ACCOUNT_RATE_LIMIT: (c) => c.rateLimits.account.limit,
      FAREBOX_OAUTH_CLIENT_RATE_LIMIT: (c) => c.rateLimits.oauthClient.limit,
      FAREBOX_ANONYMOUS_RATE_LIMIT: (c) => c.rateLimits.anonymous.limit,
    };
    const withFallback = Object.entries(GATEWAY_SETTINGS).filter(([, s]) => 'fallback' in s && s.fallback !== undefined);
    expect(withFallback.map(([name]) => name).sort()).toEqual(Object.keys(field).sort());
    for (const [name, spec] of withFallback) {
      expect([name, field[name]!(core)]).toEqual([name, (spec as { fallback: unknown }).fallback]);
      expect([name, field[name]!(env)]).toEqual([name, (spec as { fallback: unknown }).fallback]);
    }
    expect([...LOG_LEVEL_NAMES]).toEqual([...LOG_LEVELS]);
    // Defaults the docs state in words, checked here against the values.
    expect(core).toMatchObject({ port: 8787, baseUrl: 'http://127.0.0.1:8787', holdTimeoutMs: 90_000, liveness: { timeoutMs: 10_000 }, logLevel: 'info' });
    expect(core).toMatchObject({ trustProxy: false, freeTopups: true, allowLoopbackEndpoints: false, signupCredit: 50_000_000n, allowModelDownload: false });
  });

  it('the defaults it states in words for settlement, operators and the x402 facilitator are the ones the parts run with', () => {
    // The first code span of each stated default, as the parts hold it (durations in ms).
    const ms = (d: string) => Number(/^(\d+)(ms|s|m|h)$/.exec(d)![1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[/(ms|s|m|h)$/.exec(d)![1] as 'ms'];
    const c = configFromEnv(LOCAL);
    const held: Record<string, [unknown, (stated: string) => unknown]> = {
      FAREBOX_SETTLEMENT_INTERVAL: [c.settlement.settlementIntervalMs, ms],
      FAREBOX_FUNDING_INTERVAL: [c.settlement.fundingIntervalMs, ms],
      FAREBOX_ESCROW_BUDGET: [`${c.settlement.escrowBudget.requests}/${c.settlement.escrowBudget.windowMs}`, String],
      FAREBOX_DISPUTE_AUTO_REFUND_MINUTES: [c.operators.autoRefundAfterMs, (d) => Number(d) * 60_000],
      FAREBOX_DISPUTE_INTERVAL: [c.operators.disputeIntervalMs, ms],
      FAREBOX_X402_MAX_FEE_STROOPS: [c.x402.maxFeeStroops, BigInt],
      FAREBOX_X402_PAYER_DAILY_FEE_STROOPS: [c.x402.payerDailyFeeStroops, BigInt],
      FAREBOX_X402_DAILY_FEE_STROOPS: [c.x402.dailyFeeStroops, BigInt],
      FAREBOX_X402_IP_RATE_LIMIT: [c.x402.rateLimits.ip.limit, Number],
      FAREBOX_X402_PAYER_RATE_LIMIT: [c.x402.rateLimits.payer.limit, Number],
      FAREBOX_X402_CHANNELS: [c.x402.channels, Number],
      FAREBOX_X402_CHANNEL_STROOPS: [c.x402.channelStroops, BigInt],
      FAREBOX_X402_PAYER_CONCURRENCY: [c.x402.payerConcurrency, Number],
      FAREBOX_X402_REFUND_WINDOW: [c.x402.refundWindowMs, ms],
    };
    for (const [name, [value, parse]] of Object.entries(held)) {
      const stated = /`([^`]+)`/.exec((GATEWAY_SETTINGS as Record<string, { default?: string }>)[name]!.default ?? '')![1]!;
      expect([name, parse(stated)]).toEqual([name, value]);
    }
    // On mainnet the facilitator is off unless turned on; on local it is on.
    expect(c.x402.enabled).toBe(true);
  });

  it('farebox-gateway refuses to start on malformed values, the port included, and lists every problem', async () => {
    const p = spawnGateway({
      PORT: '99999',
      FAREBOX_DATA_DIR: await mkdtemp(join(tmpdir(), 'farebox-settings-')),
      FAREBOX_CALL_TIMEOUT_MS: '30s',
      FAREBOX_FREE_TOPUPS: 'yes',
      FAREBOX_LOG_PRETTY: 'no',
    });
    spawned.push(p);
    expect(await p.exited).toBe(1);
    expect(p.output()).toContain(
      [
        'farebox-gateway: refusing to start, the configuration is unsafe or invalid:',
        '  - PORT must be an integer from 0 to 65535',
        '  - FAREBOX_LOG_PRETTY must be true or false',
        '  - callTimeoutMs must be an integer >= 1',
        '  - FAREBOX_FREE_TOPUPS must be true or false',
      ].join('\n'),
    );
  });
});
