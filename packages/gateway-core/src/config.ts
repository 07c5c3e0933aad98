import { resolve } from 'node:path';
import { ConfigError } from '@farebox/protocol';
import { resolveNetwork, type NetworkConfig, type ResolveNetworkOptions } from '@farebox/stellar';
import type { RateLimitRule } from './security/rate-limit.js';
import { LOG_LEVELS, type LogLevel } from './observability/log.js';
import type { DependencyName } from './observability/dependencies.js';
import { resolveOperatorConfig, type OperatorConfigOptions, type OperatorSettings } from './operator/index.js';
import { resolveSettlementConfig, type SettlementConfigOptions, type SettlementSettings } from './settlement/config.js';
import { resolveX402Config, type X402ConfigOptions, type X402Settings } from './x402/config.js';
import { resolveMppConfig, type MppConfigOptions, type MppSettings } from './mpp/config.js';

export type NetworkName = 'local' | 'testnet' | 'mainnet';

/** The network when nothing names one (the spec's default, the same for the gateway, the SDKs and `@farebox/stellar`). */
export const DEFAULT_NETWORK: NetworkName = 'testnet';

/**
 * The gateway's settings, typed. gateway-core reads no environment: a host
 * turns its environment into these options (`configFromEnv` in
 * `apps/gateway/src/config.ts`, where each variable named below is read) and
 * `resolveGatewayConfig` validates them once, every problem reported together.
 */
export interface GatewayOptions {
  /** Public address of the gateway, e.g. `https://farebox.example`. Default `http://127.0.0.1:{port}` (`FAREBOX_BASE_URL`). */
  baseUrl?: string;
  /** Port the host listens on; only used for the default base URL. Default `PORT` or 8787. */
  port?: number;
  /** Data directory for PGlite, the keystore and cursors. Default `FAREBOX_DATA_DIR` or `./.farebox`. */
  dataDir?: string;
  /** PostgreSQL URL; when unset, embedded PGlite in `dataDir/db` (`DATABASE_URL`). */
  databaseUrl?: string;
  /** Run in this database schema (tests). */
  databaseSchema?: string;
  /** PostgreSQL connections per gateway (`FAREBOX_DB_POOL_SIZE`, default 10). */
  databasePoolSize?: number;
  /**
   * How long an API key's principal is served from memory
   * (`FAREBOX_CREDENTIAL_CACHE_MS`, default 5,000; 0 turns the cache off).
   * A revocation drops it at once, on every gateway sharing `FAREBOX_REDIS_URL`.
   */
  credentialCacheMs?: number;
  /** Settlement network preset (`STELLAR_NETWORK`; `FAREBOX_NETWORK` is a deprecated alias); default `testnet`. */
  network?: NetworkName;
  /** Devnet base URL for the local preset (`FAREBOX_DEVNET_URL`); default `{baseUrl}/devnet`. */
  devnetUrl?: string;
  /** How long a service may take to answer a call (`FAREBOX_CALL_TIMEOUT_MS`, default 30 s). */
  callTimeoutMs?: number;
  /** Holds older than this are voided by the reaper (`FAREBOX_HOLD_TIMEOUT_MS`, default 2 x call timeout + 30 s). */
  holdTimeoutMs?: number;
  /** How long a caller whose service answered waits for an unreachable database to record the charge (`FAREBOX_DB_OUTAGE_WAIT_MS`, default 15 s; docs/api.md). */
  dbOutageWaitMs?: number;
  /**
   * How often this gateway beats in the database it shares with other gateways, and checks theirs
   * (`FAREBOX_LIVENESS_INTERVAL_MS`, default 2,000).
   */
  livenessIntervalMs?: number;
  /**
   * A gateway whose beats stop for this long is dead: a live one voids its holds and ends its
   * idempotency leases (`FAREBOX_LIVENESS_TIMEOUT_MS`, default 10,000; at least 2 x the interval).
   * What a dead gateway held is back within this plus one interval of its death.
   */
  livenessTimeoutMs?: number;
  /** Force the Secure cookie flag; default: on when baseUrl is https or the request came over https. */
  secureCookies?: boolean;
  /** express `trust proxy` (`FAREBOX_TRUST_PROXY`): false, true, a hop count or a list; default false. */
  trustProxy?: boolean | number | string;
  /** How much a dynamic price may exceed the registry floor, as a multiple (`FAREBOX_MAX_PRICE_MULTIPLE`, default 100). */
  maxPriceMultiple?: number;
  /** Per-minute limits: sign-up/sign-in per IP (`FAREBOX_AUTH_RATE_LIMIT`, 20), per account (`FAREBOX_ACCOUNT_RATE_LIMIT`, 6000). */
  rateLimits?: { authPerMinute?: number; accountPerMinute?: number; anonymousPerMinute?: number; oauthClientPerMinute?: number };
  /**
   * More `Host` header values the gateway answers cookie and OAuth routes for, besides the host of `baseUrl`
   * (`FAREBOX_ALLOWED_HOSTS`, comma separated `host[:port]`).
   */
  allowedHosts?: string[];
  /**
   * Registered endpoints may be loopback addresses (`FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true`; default false;
   * refused on mainnet). The gateway's own port is never allowed.
   */
  allowLoopbackEndpoints?: boolean;
  /** Unpaid ("faucet") top-ups (`FAREBOX_FREE_TOPUPS`): default on for local, off for testnet, refused on mainnet. */
  freeTopups?: boolean;
  /** Sign-up credit in USD (`FAREBOX_SIGNUP_CREDIT`, default 5; must be set explicitly on mainnet; 0 allowed). */
  signupCredit?: string | number;
  /** Mainnet on embedded PGlite (`FAREBOX_ALLOW_EMBEDDED_DB=true`); refused otherwise. */
  allowEmbeddedDb?: boolean;
  /** Log level (`FAREBOX_LOG_LEVEL`: fatal, error, warn, info, debug, trace or silent; default info). */
  logLevel?: LogLevel;
  /**
   * Bearer token that `GET /metrics` requires (`FAREBOX_METRICS_TOKEN`, at least 16 characters);
   * without it (and without `metricsAddress`) /metrics is off.
   */
  metricsToken?: string;
  /** A separate `host:port` serving only /metrics, with no token (`FAREBOX_METRICS_ADDR`), e.g. `127.0.0.1:9464`. */
  metricsAddress?: string;
  /** `/health/ready` names the catalog down when the mirror has not read the registry for this long (`FAREBOX_CATALOG_STALE_MS`, default 60,000). */
  catalogStaleMs?: number;
  /**
   * Dependencies whose being down makes `/health/ready` answer 503, besides the database
   * (`FAREBOX_READY_REQUIRES`, comma separated: redis, rpc, horizon, catalog, discovery, model, escrow;
   * default none: they make it `degraded`, 200). Each must be configured on this gateway.
   */
  readyRequires?: readonly string[];
  /** The host passes its own wallet provider (no keystore key needed from the environment). */
  keystoreKeyProvided?: boolean;
  /** 32 bytes, hex or base64, that encrypt every wallet secret (`FAREBOX_KEYSTORE_KEY`); required off the local network. */
  keystoreKey?: string;
  /** The platform's certificate key, imported into the keystore at start (`FAREBOX_PLATFORM_SECRET`, an `S...` secret). */
  platformSecret?: string;
  /** The treasury's key, imported into the keystore at start (`FAREBOX_TREASURY_SECRET`). */
  treasurySecret?: string;
  /** Redis shared by several gateways: rate limits and credential revocations (`FAREBOX_REDIS_URL`); default in memory. */
  redisUrl?: string;
  /** A discovery backend that ranks searches (`FAREBOX_DISCOVERY_URL`); default the in-process index. */
  discoveryUrl?: string;
  /** The embedding model's directory (`FAREBOX_MODEL_DIR`); without one, search is keyword-only. */
  modelDir?: string;
  /** Download the model on first use (`FAREBOX_ALLOW_MODEL_DOWNLOAD=true`); default false. */
  allowModelDownload?: boolean;
  /** Where the model is downloaded from (`FAREBOX_MODEL_HUB_URL`, a Hugging Face mirror); default https://huggingface.co/. */
  modelHubUrl?: string;
  /** Settlement network overrides (`STELLAR_RPC_URL`, `STELLAR_HORIZON_URL`, `STELLAR_FRIENDBOT_URL`, `STELLAR_CONTRACT_ID`, `STELLAR_USDC_ISSUER`, `STELLAR_NETWORK_PASSPHRASE`, `STELLAR_EXPLORER_URL`); default the preset of `network`. */
  stellar?: Omit<ResolveNetworkOptions, 'network' | 'devnetUrl' | 'env'>;
  /** Settlement intervals and escrow provider (`FAREBOX_SETTLEMENT_INTERVAL`, `FAREBOX_FUNDING_INTERVAL`, `TRUSTLESS_WORK_URL`, `TRUSTLESS_WORK_API_KEY`, `FAREBOX_ESCROW_BUDGET`, `FAREBOX_TREASURY_AUTOFUND`). */
  settlement?: SettlementConfigOptions;
  /** Operators and the dispute policy (`FAREBOX_OPERATORS`, `FAREBOX_DISPUTE_AUTO_REFUND_MINUTES`, `FAREBOX_DISPUTE_INTERVAL`). */
  operators?: OperatorConfigOptions;
  /** Origins allowed to call /mcp from a browser besides the gateway's own (`FAREBOX_MCP_ALLOWED_ORIGINS`, comma separated). */
  mcpAllowedOrigins?: string[];
  /** The x402 facilitator (`FAREBOX_X402_*`: x402/config.ts, docs/operations.md). */
  x402?: X402ConfigOptions;
  /** MPP channel sessions (`FAREBOX_MPP_*`: mpp/config.ts). */
  mpp?: MppConfigOptions;
  /** Settings that work but should change (a deprecated variable the host read); logged at start. */
  warnings?: readonly string[];
}

export interface GatewayConfig {
  rateLimits: { auth: RateLimitRule; account: RateLimitRule; anonymous: RateLimitRule; oauthClient: RateLimitRule };
  baseUrl: string;
  publicOrigin: string;
  dataDir: string;
  databaseUrl: string | undefined;
  databaseSchema: string | undefined;
  databasePoolSize: number;
  credentialCacheMs: number;
  network: NetworkName;
  devnetUrl: string;
  callTimeoutMs: number;
  holdTimeoutMs: number;
  dbOutageWaitMs: number;
  /** Beats and checks of the gateways sharing the database (see GatewayOptions). */
  liveness: { intervalMs: number; timeoutMs: number };
  secureCookies: boolean | undefined;
  trustProxy: boolean | number | string;
  maxPriceMultiple: number;
  /** Local mode: the devnet network (friendbot, devnet USDC). */
  localMode: boolean;
  /** The port the gateway listens on (its own endpoints are never callable). */
  port: number;
  /** Lower-case `host[:port]` values accepted in the `Host` header of cookie and OAuth routes. */
  allowedHosts: readonly string[];
  allowLoopbackEndpoints: boolean;
  freeTopups: boolean;
  /** Sign-up credit in base units. */
  signupCredit: bigint;
  logLevel: LogLevel;
  metricsToken: string | undefined;
  metricsAddress: { host: string; port: number } | undefined;
  catalogStaleMs: number;
  /** Dependencies that fail `/health/ready` when down, besides the database. */
  readyRequires: readonly DependencyName[];
  /** The settlement network's endpoints and assets (the preset of `network` with any override). */
  stellar: NetworkConfig;
  settlement: SettlementSettings;
  operators: OperatorSettings;
  /** The x402 facilitator: on or off, its fee account, fee bounds and rate limits. */
  x402: X402Settings;
  /** MPP channel sessions: on or off, the challenges' secret, the channel code accepted. */
  mpp: MppSettings;
  /** Origins allowed to call /mcp from a browser besides the gateway's own. */
  mcpAllowedOrigins: readonly string[];
  redisUrl: string | undefined;
  discoveryUrl: string | undefined;
  modelDir: string | undefined;
  allowModelDownload: boolean;
  modelHubUrl: string | undefined;
  /** Keys imported or used at start; never logged or served. */
  secrets: { keystoreKey: string | undefined; platformSecret: string | undefined; treasurySecret: string | undefined };
  /** Settings that work but should change (a deprecated variable); logged at start. */
  warnings: readonly string[];
}

function int(value: string | number | undefined, name: string, problems: string[], min = 1): number | undefined {
  if (value === undefined || value === '') return undefined;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < min) {
    problems.push(`${name} must be an integer >= ${min}`);
    return undefined;
  }
  return n;
}

/** A keystore key as the keystore takes it: 64 hex characters, or base64 of 32 bytes. */
function keystoreKeyValid(text: string): boolean {
  const t = text.trim();
  return /^[0-9a-fA-F]{64}$/.test(t) || Buffer.from(t, 'base64').length === 32;
}

/**
 * Validates the gateway's settings once, before anything opens (the
 * gateway's own, the settlement network's, settlement's and the
 * operators'), and reports every problem together (`ConfigError`). Options
 * only: the host reads its environment into them (option, then environment
 * variable, then the network's preset or the default).
 */
export function resolveGatewayConfig(options: GatewayOptions = {}): GatewayConfig {
  const problems: string[] = [];
  const port = int(options.port, 'PORT', problems, 0) ?? 8787;
  const baseUrlText = (options.baseUrl ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
  let publicOrigin = '';
  try {
    const u = new URL(baseUrlText);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push('baseUrl must be http(s)');
    publicOrigin = u.origin;
  } catch {
    problems.push('baseUrl must be an absolute URL');
  }
  const network = (options.network ?? DEFAULT_NETWORK) as NetworkName;
  const networkValid = ['local', 'testnet', 'mainnet'].includes(network);
  if (!networkValid) problems.push('network must be local, testnet or mainnet');
  const callTimeoutMs = int(options.callTimeoutMs, 'callTimeoutMs', problems) ?? 30_000;
  const holdTimeoutMs = int(options.holdTimeoutMs, 'holdTimeoutMs', problems) ?? callTimeoutMs * 2 + 30_000;
  if (holdTimeoutMs <= callTimeoutMs) problems.push('holdTimeoutMs must exceed callTimeoutMs');
  const dbOutageWaitMs = int(options.dbOutageWaitMs, 'dbOutageWaitMs', problems, 0) ?? 15_000;
  const livenessIntervalMs = int(options.livenessIntervalMs, 'livenessIntervalMs', problems, 50) ?? 2_000;
  const livenessTimeoutMs = int(options.livenessTimeoutMs, 'livenessTimeoutMs', problems) ?? Math.max(10_000, livenessIntervalMs * 2);
  if (livenessTimeoutMs < livenessIntervalMs * 2) problems.push('livenessTimeoutMs must be at least 2 x livenessIntervalMs');
  const databasePoolSize = int(options.databasePoolSize, 'databasePoolSize', problems) ?? 10;
  const credentialCacheMs = int(options.credentialCacheMs, 'credentialCacheMs', problems, 0) ?? 5_000;
  if (credentialCacheMs > 60_000) problems.push('credentialCacheMs must be at most 60000');
  const maxPriceMultiple = int(options.maxPriceMultiple, 'maxPriceMultiple', problems) ?? 100;
  const trustProxy: boolean | number | string = options.trustProxy ?? false;
  const authPerMinute = int(options.rateLimits?.authPerMinute, 'authPerMinute', problems) ?? 20;
  const accountPerMinute = int(options.rateLimits?.accountPerMinute, 'accountPerMinute', problems) ?? 6_000;
  const oauthClientPerMinute = int(options.rateLimits?.oauthClientPerMinute, 'oauthClientPerMinute', problems) ?? 30_000;
  const anonymousPerMinute = int(options.rateLimits?.anonymousPerMinute, 'anonymousPerMinute', problems) ?? 300;
  const allowLoopbackEndpoints = options.allowLoopbackEndpoints ?? false;
  const freeTopups = options.freeTopups ?? network === 'local';
  const allowEmbeddedDb = options.allowEmbeddedDb ?? false;
  const signupText = options.signupCredit === '' ? undefined : options.signupCredit;
  let signupCredit = 5n * 10_000_000n;
  if (signupText !== undefined) {
    const m = /^\s*(\d{1,4})(?:\.(\d{1,7}))?\s*$/.exec(String(signupText));
    if (!m || Number(m[1]) > 1000) problems.push('FAREBOX_SIGNUP_CREDIT must be a USD amount from 0 to 1000 (at most 7 decimals)');
    else signupCredit = BigInt(m[1]!) * 10_000_000n + BigInt((m[2] ?? '').padEnd(7, '0'));
  }
  const logLevel = (options.logLevel || 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`FAREBOX_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const metricsToken = options.metricsToken || undefined;
  if (metricsToken !== undefined && metricsToken.length < 16) problems.push('FAREBOX_METRICS_TOKEN must be at least 16 characters');
  let metricsAddress: { host: string; port: number } | undefined;
  const metricsAddr = options.metricsAddress || undefined;
  if (metricsAddr !== undefined) {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(metricsAddr);
    if (!m || Number(m[2]) > 65535) problems.push('FAREBOX_METRICS_ADDR must be host:port, e.g. 127.0.0.1:9464');
    else metricsAddress = { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  }
  const catalogStaleMs = int(options.catalogStaleMs, 'FAREBOX_CATALOG_STALE_MS', problems) ?? 60_000;
  const allowedHosts = new Set<string>();
  if (publicOrigin) allowedHosts.add(new URL(publicOrigin).host.toLowerCase());
  for (const raw of options.allowedHosts ?? []) {
    const h = raw.trim().toLowerCase();
    if (!h) continue;
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(h)) problems.push(`FAREBOX_ALLOWED_HOSTS: "${raw.trim()}" is not a host[:port]`);
    else allowedHosts.add(h);
  }
  const databaseUrl = options.databaseUrl || undefined;
  const keystoreKey = options.keystoreKey || undefined;

  // Where money is real, an unsafe setting is refused at start (docs/production.md).
  if (network === 'mainnet') {
    if (!databaseUrl && !allowEmbeddedDb)
      problems.push('mainnet needs DATABASE_URL (a PostgreSQL server): embedded PGlite runs without fsync; set FAREBOX_ALLOW_EMBEDDED_DB=true to accept that');
    if (publicOrigin.startsWith('http:')) problems.push('mainnet needs an https FAREBOX_BASE_URL (session cookies and OAuth redirects travel over it)');
    if (options.freeTopups === true) problems.push('FAREBOX_FREE_TOPUPS=true is refused on mainnet: top-ups must be paid on chain');
    if (allowLoopbackEndpoints) problems.push('FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true is refused on mainnet');
    if (signupText === undefined) problems.push('mainnet needs FAREBOX_SIGNUP_CREDIT set explicitly (USD given to each new account; 0 allowed)');
  }
  if (network !== 'local' && !keystoreKey && !options.keystoreKeyProvided) {
    problems.push(`${network} needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them`);
  }
  if (keystoreKey && !keystoreKeyValid(keystoreKey)) problems.push('FAREBOX_KEYSTORE_KEY must be 32 bytes, as 64 hex characters or base64');

  // The other parts' settings are checked too, against the named network even when the gateway's own are wrong.
  const networkName: NetworkName = networkValid ? network : 'testnet';
  const devnetUrl = (options.devnetUrl ?? `${baseUrlText}/devnet`).replace(/\/+$/, '');
  const collect = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  const stellar = collect(() => resolveNetwork({ ...options.stellar, network: networkName, devnetUrl: publicOrigin ? devnetUrl : 'http://127.0.0.1/devnet' }));
  const settlement = collect(() => resolveSettlementConfig(options.settlement ?? {}, networkName, publicOrigin ? devnetUrl : 'http://127.0.0.1/devnet'));
  const operators = collect(() => resolveOperatorConfig(options.operators));
  const x402 = collect(() => resolveX402Config(options.x402 ?? {}, networkName));
  const mpp = collect(() => resolveMppConfig(options.mpp ?? {}, networkName));
  const readyRequires = resolveReadyRequires(options, settlement?.escrowApiKey !== undefined, problems);

  if (problems.length || !stellar || !settlement || !operators || !x402 || !mpp) throw new ConfigError(problems);
  return {
    warnings: options.warnings ?? [],
    logLevel,
    metricsToken,
    metricsAddress,
    catalogStaleMs,
    readyRequires,
    port,
    allowedHosts: [...allowedHosts],
    allowLoopbackEndpoints,
    freeTopups,
    signupCredit,
    baseUrl: baseUrlText,
    publicOrigin,
    dataDir: resolve(options.dataDir ?? './.farebox'),
    databaseUrl,
    databaseSchema: options.databaseSchema,
    databasePoolSize,
    credentialCacheMs,
    network,
    devnetUrl,
    callTimeoutMs,
    holdTimeoutMs,
    dbOutageWaitMs,
    liveness: { intervalMs: livenessIntervalMs, timeoutMs: livenessTimeoutMs },
    secureCookies: options.secureCookies ?? (baseUrlText.startsWith('https:') ? true : undefined),
    trustProxy,
    maxPriceMultiple,
    localMode: network === 'local',
    rateLimits: {
      auth: { name: 'auth-ip', limit: authPerMinute, windowMs: 60_000 },
      account: { name: 'account', limit: accountPerMinute, windowMs: 60_000 },
      anonymous: { name: 'anon-ip', limit: anonymousPerMinute, windowMs: 60_000 },
      oauthClient: { name: 'oauth-client', limit: oauthClientPerMinute, windowMs: 60_000 },
    },
    stellar,
    settlement,
    operators,
    x402,
    mpp,
    mcpAllowedOrigins: (options.mcpAllowedOrigins ?? []).map((o) => o.trim()).filter(Boolean),
    redisUrl: options.redisUrl || undefined,
    discoveryUrl: options.discoveryUrl || undefined,
    modelDir: options.modelDir || undefined,
    allowModelDownload: options.allowModelDownload ?? false,
    modelHubUrl: options.modelHubUrl || undefined,
    secrets: { keystoreKey, platformSecret: options.platformSecret || undefined, treasurySecret: options.treasurySecret || undefined },
  };
}

/** `FAREBOX_READY_REQUIRES`: known dependency names, each configured here (the database is always required). */
function resolveReadyRequires(options: GatewayOptions, escrow: boolean, problems: string[]): DependencyName[] {
  const out: DependencyName[] = [];
  const configured: Record<Exclude<DependencyName, 'database'>, boolean> = {
    redis: Boolean(options.redisUrl),
    rpc: true,
    horizon: true,
    catalog: true,
    discovery: Boolean(options.discoveryUrl),
    model: !options.discoveryUrl && Boolean(options.modelDir || options.allowModelDownload),
    escrow,
  };
  const setting: Record<string, string> = {
    redis: 'FAREBOX_REDIS_URL',
    discovery: 'FAREBOX_DISCOVERY_URL',
    model: 'FAREBOX_MODEL_DIR without FAREBOX_DISCOVERY_URL',
    escrow: 'TRUSTLESS_WORK_API_KEY',
  };
  for (const raw of options.readyRequires ?? []) {
    const name = raw.trim().toLowerCase();
    if (!name || name === 'database' || out.includes(name as DependencyName)) continue;
    if (!(name in configured)) {
      problems.push(`FAREBOX_READY_REQUIRES: unknown dependency "${raw.trim()}" (one of ${Object.keys(configured).join(', ')})`);
    } else if (!configured[name as keyof typeof configured]) {
      problems.push(`FAREBOX_READY_REQUIRES names ${name}, which this gateway does not use (set ${setting[name]})`);
    } else out.push(name as DependencyName);
  }
  return out;
}
