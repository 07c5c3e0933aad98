import { ConfigError } from '@farebox/protocol';
import {
  DEFAULT_NETWORK,
  LOG_LEVELS,
  resolveGatewayConfig,
  type GatewayConfig,
  type GatewayOptions,
  type LogLevel,
  type NetworkName,
} from '@farebox/gateway-core';
import type { StartGatewayOptions } from './server.js';

/** A process environment (`process.env`, or a test's own map). */
export type Env = Record<string, string | undefined>;

/** What `farebox-gateway` reads from its environment, once, at start. */
export interface GatewayHostConfig {
  /**
   * The options `startGateway` gets: the listen address, and the
   * environment, which `startGateway` turns into the gateway's typed
   * configuration with `configFromEnv` once it knows its own address (every
   * problem reported at once).
   */
  options: StartGatewayOptions;
  /** The network it names (`STELLAR_NETWORK`, the deprecated `FAREBOX_NETWORK`, else `testnet`). */
  network: string;
  /** Log lines: the level if valid (an invalid one is reported with the other problems) and readable (pretty) lines or JSON. */
  log: { level: LogLevel | undefined; pretty: boolean; colors: boolean };
}

/**
 * The network an environment names: `STELLAR_NETWORK`, else the deprecated
 * `FAREBOX_NETWORK` (with a warning), else undefined (the caller's option or
 * `DEFAULT_NETWORK`).
 */
export function networkFromEnv(env: Env): { network: string | undefined; warnings: string[]; problems: string[] } {
  const current = env.STELLAR_NETWORK || undefined;
  const legacy = env.FAREBOX_NETWORK || undefined;
  if (legacy === undefined) return { network: current, warnings: [], problems: [] };
  if (current !== undefined && current !== legacy) {
    return {
      network: current,
      warnings: [],
      problems: [`STELLAR_NETWORK=${current} and the deprecated FAREBOX_NETWORK=${legacy} disagree: remove FAREBOX_NETWORK`],
    };
  }
  return { network: legacy, warnings: ['FAREBOX_NETWORK is deprecated: set STELLAR_NETWORK instead (same values)'], problems: [] };
}

/**
 * The gateway host's one configuration reader: every environment variable
 * `farebox-gateway` uses is read in this file (README, Configuration), and
 * nowhere else in the host or in `@farebox/gateway-core`, which takes typed
 * options only. `terminal` is whether stdout is a terminal (pretty logs by
 * default there).
 *
 * @example
 * const { options } = loadConfig(process.env, process.stdout.isTTY === true);
 * await startGateway(options);
 */
export function loadConfig(env: Env, terminal = false): GatewayHostConfig {
  const level = env.FAREBOX_LOG_LEVEL || 'info';
  const pretty = env.FAREBOX_LOG_PRETTY ? env.FAREBOX_LOG_PRETTY === 'true' : terminal;
  // Colours on a terminal, or when the program reading the lines shows them on one (FORCE_COLOR, as `npm start` sets it); never with NO_COLOR.
  const colors = pretty && !env.NO_COLOR && (terminal || (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0'));
  return {
    options: {
      env,
      ...(env.HOST ? { host: env.HOST } : {}),
      ...(env.PORT ? { port: Number(env.PORT) } : {}),
    },
    network: networkFromEnv(env).network ?? DEFAULT_NETWORK,
    log: { level: (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : undefined, pretty, colors },
  };
}

/** Where the host listens and keeps its files, before the gateway is built (option, then environment, then default). */
export function listenSettingsFromEnv(
  env: Env,
  options: StartGatewayOptions = {},
): { host: string; port: number; baseUrl: string | undefined; network: string; devnetUrl: string | undefined; dataDir: string; devnetPassphrase: string } {
  return {
    host: options.host ?? env.HOST ?? '127.0.0.1',
    port: options.port ?? (env.PORT ? Number(env.PORT) : 8787),
    baseUrl: options.baseUrl ?? env.FAREBOX_BASE_URL,
    network: options.network ?? networkFromEnv(env).network ?? DEFAULT_NETWORK,
    devnetUrl: options.devnetUrl ?? (env.FAREBOX_DEVNET_URL || undefined),
    dataDir: options.dataDir ?? env.FAREBOX_DATA_DIR ?? './.farebox',
    // The embedded devnet's passphrase, in the precedence the gateway's own network config uses (resolveNetwork).
    devnetPassphrase:
      options.stellar?.passphrase ||
      text(env.STELLAR_NETWORK_PASSPHRASE) ||
      options.stellar?.devnetPassphrase ||
      text(env.FAREBOX_DEVNET_PASSPHRASE) ||
      'local',
  };
}

const text = (v: string | undefined): string | undefined => (v === undefined || v === '' ? undefined : v);
const num = (v: string | undefined): number | undefined => (text(v) === undefined ? undefined : Number(v));
const list = (v: string | undefined): string[] | undefined => (text(v) === undefined ? undefined : v!.split(','));

/** Drops the keys whose value is undefined, so that an option left out does not hide its variable. */
function defined<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The gateway's settings as its environment gives them (the variables of
 * docs/production.md and the README), before validation: the typed options
 * `@farebox/gateway-core` takes. Malformed flags are reported in `problems`.
 */
export function gatewayOptionsFromEnv(env: Env): { options: GatewayOptions; problems: string[]; warnings: string[] } {
  const problems: string[] = [];
  const flag = (name: string): boolean | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    if (v !== 'true' && v !== 'false') {
      problems.push(`${name} must be true or false`);
      return undefined;
    }
    return v === 'true';
  };
  const named = networkFromEnv(env);
  problems.push(...named.problems);
  const tp = text(env.FAREBOX_TRUST_PROXY);
  const options: GatewayOptions = {
    port: num(env.PORT),
    baseUrl: env.FAREBOX_BASE_URL,
    dataDir: env.FAREBOX_DATA_DIR,
    databaseUrl: text(env.DATABASE_URL),
    databasePoolSize: num(env.FAREBOX_DB_POOL_SIZE),
    credentialCacheMs: num(env.FAREBOX_CREDENTIAL_CACHE_MS),
    network: named.network as NetworkName | undefined,
    devnetUrl: env.FAREBOX_DEVNET_URL,
    callTimeoutMs: num(env.FAREBOX_CALL_TIMEOUT_MS),
    holdTimeoutMs: num(env.FAREBOX_HOLD_TIMEOUT_MS),
    dbOutageWaitMs: num(env.FAREBOX_DB_OUTAGE_WAIT_MS),
    livenessIntervalMs: num(env.FAREBOX_LIVENESS_INTERVAL_MS),
    livenessTimeoutMs: num(env.FAREBOX_LIVENESS_TIMEOUT_MS),
    trustProxy: tp === undefined ? undefined : tp === 'true' ? true : tp === 'false' ? false : /^\d+$/.test(tp) ? Number(tp) : tp,
    maxPriceMultiple: num(env.FAREBOX_MAX_PRICE_MULTIPLE),
    rateLimits: defined({
      authPerMinute: num(env.FAREBOX_AUTH_RATE_LIMIT),
      accountPerMinute: num(env.FAREBOX_ACCOUNT_RATE_LIMIT),
      oauthClientPerMinute: num(env.FAREBOX_OAUTH_CLIENT_RATE_LIMIT),
      anonymousPerMinute: num(env.FAREBOX_ANONYMOUS_RATE_LIMIT),
    }),
    allowLoopbackEndpoints: flag('FAREBOX_ALLOW_LOOPBACK_ENDPOINTS'),
    freeTopups: flag('FAREBOX_FREE_TOPUPS'),
    allowEmbeddedDb: flag('FAREBOX_ALLOW_EMBEDDED_DB'),
    signupCredit: text(env.FAREBOX_SIGNUP_CREDIT),
    logLevel: text(env.FAREBOX_LOG_LEVEL) as LogLevel | undefined,
    metricsToken: text(env.FAREBOX_METRICS_TOKEN),
    metricsAddress: text(env.FAREBOX_METRICS_ADDR),
    catalogStaleMs: num(env.FAREBOX_CATALOG_STALE_MS),
    readyRequires: list(env.FAREBOX_READY_REQUIRES),
    allowedHosts: list(env.FAREBOX_ALLOWED_HOSTS),
    keystoreKey: text(env.FAREBOX_KEYSTORE_KEY),
    platformSecret: text(env.FAREBOX_PLATFORM_SECRET),
    treasurySecret: text(env.FAREBOX_TREASURY_SECRET),
    redisUrl: text(env.FAREBOX_REDIS_URL),
    discoveryUrl: text(env.FAREBOX_DISCOVERY_URL),
    modelDir: text(env.FAREBOX_MODEL_DIR),
    allowModelDownload: env.FAREBOX_ALLOW_MODEL_DOWNLOAD === 'true',
    modelHubUrl: text(env.FAREBOX_MODEL_HUB_URL),
    // The network's own overrides (an empty value is the preset's; STELLAR_FRIENDBOT_URL=none turns the friendbot off).
    stellar: defined({
      rpcUrl: text(env.STELLAR_RPC_URL),
      horizonUrl: text(env.STELLAR_HORIZON_URL),
      friendbotUrl: text(env.STELLAR_FRIENDBOT_URL),
      contractId: text(env.STELLAR_CONTRACT_ID),
      usdcIssuer: text(env.STELLAR_USDC_ISSUER),
      passphrase: text(env.STELLAR_NETWORK_PASSPHRASE),
      devnetPassphrase: text(env.FAREBOX_DEVNET_PASSPHRASE),
      explorerUrl: text(env.STELLAR_EXPLORER_URL),
    }),
    settlement: defined({
      settlementInterval: env.FAREBOX_SETTLEMENT_INTERVAL,
      fundingInterval: env.FAREBOX_FUNDING_INTERVAL,
      escrowUrl: env.TRUSTLESS_WORK_URL,
      escrowApiKey: env.TRUSTLESS_WORK_API_KEY,
      escrowBudget: text(env.FAREBOX_ESCROW_BUDGET),
      treasuryAutofund: flag('FAREBOX_TREASURY_AUTOFUND'),
    }),
    operators: defined({
      operators: env.FAREBOX_OPERATORS,
      disputeAutoRefundMinutes: env.FAREBOX_DISPUTE_AUTO_REFUND_MINUTES,
      disputeInterval: env.FAREBOX_DISPUTE_INTERVAL,
    }),
    mcpAllowedOrigins: list(env.FAREBOX_MCP_ALLOWED_ORIGINS),
    x402: defined({
      facilitator: flag('FAREBOX_X402_FACILITATOR'),
      feeAccountSecret: text(env.FAREBOX_X402_FEE_ACCOUNT_SECRET),
      maxFeeStroops: text(env.FAREBOX_X402_MAX_FEE_STROOPS),
      payerDailyFeeStroops: text(env.FAREBOX_X402_PAYER_DAILY_FEE_STROOPS),
      dailyFeeStroops: text(env.FAREBOX_X402_DAILY_FEE_STROOPS),
      newPayerDailyFeeStroops: text(env.FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS),
      serviceNewPayerDailyFeeStroops: text(env.FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS),
      ipPerMinute: text(env.FAREBOX_X402_IP_RATE_LIMIT),
      payerPerMinute: text(env.FAREBOX_X402_PAYER_RATE_LIMIT),
      channels: text(env.FAREBOX_X402_CHANNELS),
      channelStroops: text(env.FAREBOX_X402_CHANNEL_STROOPS),
      payerConcurrency: text(env.FAREBOX_X402_PAYER_CONCURRENCY),
      refundWindow: text(env.FAREBOX_X402_REFUND_WINDOW),
    }),
  };
  return { options: defined(options), problems, warnings: named.warnings };
}

/**
 * The gateway's one typed, validated configuration from an environment and
 * the host's options (option, then environment variable, then the network's
 * preset or the default). Throws `ConfigError` naming every problem at once,
 * the environment's and the options' together. Use it wherever
 * `@farebox/gateway-core` runs from an environment without this host.
 *
 * @example
 * const config = configFromEnv(process.env, { port: 8787 });
 * const core = await createGateway({ config });
 */
export function configFromEnv(env: Env, options: GatewayOptions = {}): GatewayConfig {
  const parsed = gatewayOptionsFromEnv(env);
  const given = defined(options);
  const merged: GatewayOptions = {
    ...parsed.options,
    ...given,
    rateLimits: { ...parsed.options.rateLimits, ...defined(options.rateLimits) },
    stellar: { ...parsed.options.stellar, ...defined(options.stellar) },
    settlement: { ...parsed.options.settlement, ...defined(options.settlement) },
    operators: { ...parsed.options.operators, ...defined(options.operators) },
    x402: { ...parsed.options.x402, ...defined(options.x402) },
    // An option naming the network wins without the deprecated variable's warning.
    warnings: [...(options.network === undefined ? parsed.warnings : []), ...(options.warnings ?? [])],
  };
  try {
    const config = resolveGatewayConfig(merged);
    if (parsed.problems.length) throw new ConfigError(parsed.problems);
    return config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    throw new ConfigError([...parsed.problems, ...err.problems.filter((p) => !parsed.problems.includes(p))]);
  }
}
