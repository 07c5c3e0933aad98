import { ConfigError, readSettings, type SettingValues } from '@farebox/protocol';
import { DEFAULT_NETWORK, resolveGatewayConfig, type GatewayConfig, type GatewayOptions, type LogLevel, type NetworkName } from '@farebox/gateway-core';
import type { StartGatewayOptions } from './server.js';
import { GATEWAY_SETTINGS } from './settings.js';

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

/** The environment read against `GATEWAY_SETTINGS` (settings.ts): typed values, and the problems of malformed ones. */
export function readGatewaySettings(env: Env): { values: GatewaySettingValues; problems: string[] } {
  return readSettings(env, GATEWAY_SETTINGS);
}
export type GatewaySettingValues = SettingValues<typeof GATEWAY_SETTINGS>;

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
 * `farebox-gateway` uses is declared in settings.ts (docs/configuration.md)
 * and read in this file, nowhere else in the host or in
 * `@farebox/gateway-core`, which takes typed options only. `terminal` is
 * whether stdout is a terminal (pretty logs by default there). A malformed
 * value is not reported here but by `startGateway`, with every other problem.
 *
 * @example
 * const { options } = loadConfig(process.env, process.stdout.isTTY === true);
 * await startGateway(options);
 */
export function loadConfig(env: Env, terminal = false): GatewayHostConfig {
  const { values } = readGatewaySettings(env);
  const pretty = values.FAREBOX_LOG_PRETTY ?? terminal;
  // Colours on a terminal, or when the program reading the lines shows them on one (FORCE_COLOR, as `npm start` sets it); never with NO_COLOR.
  const colors = pretty && !values.NO_COLOR && (terminal || (values.FORCE_COLOR !== undefined && values.FORCE_COLOR !== '0'));
  return {
    options: {
      env,
      ...(values.HOST ? { host: values.HOST } : {}),
      ...(values.PORT !== undefined ? { port: values.PORT } : {}),
    },
    network: networkFromEnv(env).network ?? DEFAULT_NETWORK,
    log: { level: env.FAREBOX_LOG_LEVEL ? values.FAREBOX_LOG_LEVEL : 'info', pretty, colors },
  };
}

/**
 * Where the host listens and keeps its files, before the gateway is built
 * (option, then environment, then default). A malformed setting stops it
 * here, before anything listens: `ConfigError` names every problem of the
 * environment and the options together (`configFromEnv`).
 */
export function listenSettingsFromEnv(
  env: Env,
  options: StartGatewayOptions = {},
): { host: string; port: number; baseUrl: string | undefined; network: string; devnetUrl: string | undefined; dataDir: string; devnetPassphrase: string } {
  const { values, problems } = readGatewaySettings(env);
  if (problems.length) configFromEnv(env, { ...options, ...(options.wallets ? { keystoreKeyProvided: true } : {}) });
  return {
    host: options.host ?? values.HOST ?? '127.0.0.1',
    port: options.port ?? values.PORT ?? 8787,
    baseUrl: options.baseUrl ?? values.FAREBOX_BASE_URL,
    network: options.network ?? networkFromEnv(env).network ?? DEFAULT_NETWORK,
    devnetUrl: options.devnetUrl ?? values.FAREBOX_DEVNET_URL,
    dataDir: options.dataDir ?? values.FAREBOX_DATA_DIR ?? './.farebox',
    // The embedded devnet's passphrase, in the precedence the gateway's own network config uses (resolveNetwork).
    devnetPassphrase:
      options.stellar?.passphrase || values.STELLAR_NETWORK_PASSPHRASE || options.stellar?.devnetPassphrase || values.FAREBOX_DEVNET_PASSPHRASE || 'local',
  };
}

/** Drops the keys whose value is undefined, so that an option left out does not hide its variable. */
function defined<T extends object>(o: T | undefined): Partial<T> {
  return Object.fromEntries(Object.entries(o ?? {}).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The gateway's settings as its environment gives them (`GATEWAY_SETTINGS`,
 * docs/configuration.md), parsed but not yet validated together: the typed
 * options `@farebox/gateway-core` takes. Malformed values are reported in
 * `problems` (and left out of the options).
 */
export function gatewayOptionsFromEnv(env: Env): { options: GatewayOptions; problems: string[]; warnings: string[] } {
  const { values: v, problems } = readGatewaySettings(env);
  const named = networkFromEnv(env);
  problems.push(...named.problems);
  const options: GatewayOptions = {
    port: v.PORT,
    baseUrl: v.FAREBOX_BASE_URL,
    dataDir: v.FAREBOX_DATA_DIR,
    databaseUrl: v.DATABASE_URL,
    databasePoolSize: v.FAREBOX_DB_POOL_SIZE,
    credentialCacheMs: v.FAREBOX_CREDENTIAL_CACHE_MS,
    network: named.network as NetworkName | undefined,
    devnetUrl: v.FAREBOX_DEVNET_URL,
    callTimeoutMs: v.FAREBOX_CALL_TIMEOUT_MS,
    holdTimeoutMs: v.FAREBOX_HOLD_TIMEOUT_MS,
    dbOutageWaitMs: v.FAREBOX_DB_OUTAGE_WAIT_MS,
    livenessIntervalMs: v.FAREBOX_LIVENESS_INTERVAL_MS,
    livenessTimeoutMs: v.FAREBOX_LIVENESS_TIMEOUT_MS,
    trustProxy: v.FAREBOX_TRUST_PROXY,
    maxPriceMultiple: v.FAREBOX_MAX_PRICE_MULTIPLE,
    rateLimits: defined({
      authPerMinute: v.FAREBOX_AUTH_RATE_LIMIT,
      accountPerMinute: v.FAREBOX_ACCOUNT_RATE_LIMIT,
      oauthClientPerMinute: v.FAREBOX_OAUTH_CLIENT_RATE_LIMIT,
      anonymousPerMinute: v.FAREBOX_ANONYMOUS_RATE_LIMIT,
    }),
    allowLoopbackEndpoints: v.FAREBOX_ALLOW_LOOPBACK_ENDPOINTS,
    freeTopups: v.FAREBOX_FREE_TOPUPS,
    allowEmbeddedDb: v.FAREBOX_ALLOW_EMBEDDED_DB,
    signupCredit: v.FAREBOX_SIGNUP_CREDIT,
    logLevel: v.FAREBOX_LOG_LEVEL,
    metricsToken: v.FAREBOX_METRICS_TOKEN,
    metricsAddress: v.FAREBOX_METRICS_ADDR,
    catalogStaleMs: v.FAREBOX_CATALOG_STALE_MS,
    readyRequires: v.FAREBOX_READY_REQUIRES,
    allowedHosts: v.FAREBOX_ALLOWED_HOSTS,
    keystoreKey: v.FAREBOX_KEYSTORE_KEY,
    platformSecret: v.FAREBOX_PLATFORM_SECRET,
    treasurySecret: v.FAREBOX_TREASURY_SECRET,
    redisUrl: v.FAREBOX_REDIS_URL,
    discoveryUrl: v.FAREBOX_DISCOVERY_URL,
    modelDir: v.FAREBOX_MODEL_DIR,
    allowModelDownload: v.FAREBOX_ALLOW_MODEL_DOWNLOAD ?? false,
    modelHubUrl: v.FAREBOX_MODEL_HUB_URL,
    // The network's own overrides (an empty value is the preset's; STELLAR_FRIENDBOT_URL=none turns the friendbot off).
    stellar: defined({
      rpcUrl: v.STELLAR_RPC_URL,
      horizonUrl: v.STELLAR_HORIZON_URL,
      friendbotUrl: v.STELLAR_FRIENDBOT_URL,
      contractId: v.STELLAR_CONTRACT_ID,
      usdcIssuer: v.STELLAR_USDC_ISSUER,
      passphrase: v.STELLAR_NETWORK_PASSPHRASE,
      devnetPassphrase: v.FAREBOX_DEVNET_PASSPHRASE,
      explorerUrl: v.STELLAR_EXPLORER_URL,
    }),
    settlement: defined({
      settlementInterval: v.FAREBOX_SETTLEMENT_INTERVAL,
      fundingInterval: v.FAREBOX_FUNDING_INTERVAL,
      escrowUrl: v.TRUSTLESS_WORK_URL,
      escrowApiKey: v.TRUSTLESS_WORK_API_KEY,
      escrowBudget: v.FAREBOX_ESCROW_BUDGET,
      treasuryAutofund: v.FAREBOX_TREASURY_AUTOFUND,
    }),
    operators: defined({
      operators: v.FAREBOX_OPERATORS,
      disputeAutoRefundMinutes: v.FAREBOX_DISPUTE_AUTO_REFUND_MINUTES,
      disputeInterval: v.FAREBOX_DISPUTE_INTERVAL,
    }),
    mcpAllowedOrigins: v.FAREBOX_MCP_ALLOWED_ORIGINS,
    x402: defined({
      facilitator: v.FAREBOX_X402_FACILITATOR,
      feeAccountSecret: v.FAREBOX_X402_FEE_ACCOUNT_SECRET,
      maxFeeStroops: v.FAREBOX_X402_MAX_FEE_STROOPS,
      payerDailyFeeStroops: v.FAREBOX_X402_PAYER_DAILY_FEE_STROOPS,
      dailyFeeStroops: v.FAREBOX_X402_DAILY_FEE_STROOPS,
      newPayerDailyFeeStroops: v.FAREBOX_X402_NEW_PAYER_DAILY_FEE_STROOPS,
      serviceNewPayerDailyFeeStroops: v.FAREBOX_X402_SERVICE_NEW_PAYER_DAILY_FEE_STROOPS,
      ipPerMinute: v.FAREBOX_X402_IP_RATE_LIMIT,
      payerPerMinute: v.FAREBOX_X402_PAYER_RATE_LIMIT,
      channels: v.FAREBOX_X402_CHANNELS,
      channelStroops: v.FAREBOX_X402_CHANNEL_STROOPS,
      payerConcurrency: v.FAREBOX_X402_PAYER_CONCURRENCY,
      refundWindow: v.FAREBOX_X402_REFUND_WINDOW,
    }),
    mpp: defined({
      secret: v.FAREBOX_MPP_SECRET,
      channelWasmHashes: v.FAREBOX_MPP_CHANNEL_WASM_HASHES,
      minRefundWaitingPeriod: v.FAREBOX_MPP_MIN_REFUND_WAITING_PERIOD,
      idleClose: v.FAREBOX_MPP_IDLE_CLOSE,
      settleMin: v.FAREBOX_MPP_SETTLE_MIN,
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
