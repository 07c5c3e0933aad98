import { resolve } from 'node:path';
import { ConfigError } from '@farebox/protocol';
import type { RateLimitRule } from './security/rate-limit.js';
import { LOG_LEVELS, type LogLevel } from './observability/log.js';

export type NetworkName = 'local' | 'testnet' | 'mainnet';

/** The network when nothing names one (the spec's default, the same for the gateway, the SDKs and `@farebox/stellar`). */
export const DEFAULT_NETWORK: NetworkName = 'testnet';

/**
 * The network an environment names: `STELLAR_NETWORK`, else the deprecated
 * `FAREBOX_NETWORK` (with a warning), else undefined (the caller's option or
 * {@link DEFAULT_NETWORK}).
 */
export function networkFromEnv(env: Record<string, string | undefined>): { network: string | undefined; warnings: string[]; problems: string[] } {
  const current = env.STELLAR_NETWORK || undefined;
  const legacy = env.FAREBOX_NETWORK || undefined;
  if (legacy === undefined) return { network: current, warnings: [], problems: [] };
  if (current !== undefined && current !== legacy) {
    return { network: current, warnings: [], problems: [`STELLAR_NETWORK=${current} and the deprecated FAREBOX_NETWORK=${legacy} disagree: remove FAREBOX_NETWORK`] };
  }
  return { network: legacy, warnings: ['FAREBOX_NETWORK is deprecated: set STELLAR_NETWORK instead (same values)'], problems: [] };
}

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
  /** `/health/ready` fails when the catalog mirror has not read the registry for this long (`FAREBOX_CATALOG_STALE_MS`, default 60,000). */
  catalogStaleMs?: number;
  /** The host passes its own wallet provider (no keystore key needed from the environment). */
  keystoreKeyProvided?: boolean;
  env?: Record<string, string | undefined>;
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

/** Validates options once (option, then environment, then default) and reports every problem together. */
export function resolveGatewayConfig(options: GatewayOptions = {}): GatewayConfig {
  const env = options.env ?? {};
  const problems: string[] = [];
  const port = int(options.port ?? env.PORT, 'PORT', problems, 0) ?? 8787;
  const baseUrlText = (options.baseUrl ?? env.FAREBOX_BASE_URL ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
  let publicOrigin = '';
  try {
    const u = new URL(baseUrlText);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') problems.push('baseUrl must be http(s)');
    publicOrigin = u.origin;
  } catch {
    problems.push('baseUrl must be an absolute URL');
  }
  const named = networkFromEnv(env);
  problems.push(...named.problems);
  const network = (options.network ?? named.network ?? DEFAULT_NETWORK) as NetworkName;
  if (!['local', 'testnet', 'mainnet'].includes(network)) problems.push('network must be local, testnet or mainnet');
  const callTimeoutMs = int(options.callTimeoutMs ?? env.FAREBOX_CALL_TIMEOUT_MS, 'callTimeoutMs', problems) ?? 30_000;
  const holdTimeoutMs = int(options.holdTimeoutMs ?? env.FAREBOX_HOLD_TIMEOUT_MS, 'holdTimeoutMs', problems) ?? callTimeoutMs * 2 + 30_000;
  if (holdTimeoutMs <= callTimeoutMs) problems.push('holdTimeoutMs must exceed callTimeoutMs');
  const databasePoolSize = int(options.databasePoolSize ?? env.FAREBOX_DB_POOL_SIZE, 'databasePoolSize', problems) ?? 10;
  const credentialCacheMs = int(options.credentialCacheMs ?? env.FAREBOX_CREDENTIAL_CACHE_MS, 'credentialCacheMs', problems, 0) ?? 5_000;
  if (credentialCacheMs > 60_000) problems.push('credentialCacheMs must be at most 60000');
  const maxPriceMultiple = int(options.maxPriceMultiple ?? env.FAREBOX_MAX_PRICE_MULTIPLE, 'maxPriceMultiple', problems) ?? 100;
  let trustProxy: boolean | number | string = options.trustProxy ?? false;
  const tp = env.FAREBOX_TRUST_PROXY;
  if (options.trustProxy === undefined && tp) trustProxy = tp === 'true' ? true : tp === 'false' ? false : /^\d+$/.test(tp) ? Number(tp) : tp;
  const authPerMinute = int(options.rateLimits?.authPerMinute ?? env.FAREBOX_AUTH_RATE_LIMIT, 'authPerMinute', problems) ?? 20;
  const accountPerMinute = int(options.rateLimits?.accountPerMinute ?? env.FAREBOX_ACCOUNT_RATE_LIMIT, 'accountPerMinute', problems) ?? 6_000;
  const oauthClientPerMinute = int(options.rateLimits?.oauthClientPerMinute ?? env.FAREBOX_OAUTH_CLIENT_RATE_LIMIT, 'oauthClientPerMinute', problems) ?? 30_000;
  const anonymousPerMinute = int(options.rateLimits?.anonymousPerMinute ?? env.FAREBOX_ANONYMOUS_RATE_LIMIT, 'anonymousPerMinute', problems) ?? 300;
  const flag = (option: boolean | undefined, name: string): boolean | undefined => {
    if (option !== undefined) return option;
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    if (v !== 'true' && v !== 'false') {
      problems.push(`${name} must be true or false`);
      return undefined;
    }
    return v === 'true';
  };
  const allowLoopbackEndpoints = flag(options.allowLoopbackEndpoints, 'FAREBOX_ALLOW_LOOPBACK_ENDPOINTS') ?? false;
  const freeTopupsSetting = flag(options.freeTopups, 'FAREBOX_FREE_TOPUPS');
  const freeTopups = freeTopupsSetting ?? network === 'local';
  const allowEmbeddedDb = flag(options.allowEmbeddedDb, 'FAREBOX_ALLOW_EMBEDDED_DB') ?? false;
  const signupText = options.signupCredit ?? (env.FAREBOX_SIGNUP_CREDIT === '' ? undefined : env.FAREBOX_SIGNUP_CREDIT);
  let signupCredit = 5n * 10_000_000n;
  if (signupText !== undefined) {
    const m = /^\s*(\d{1,4})(?:\.(\d{1,7}))?\s*$/.exec(String(signupText));
    if (!m || Number(m[1]) > 1000) problems.push('FAREBOX_SIGNUP_CREDIT must be a USD amount from 0 to 1000 (at most 7 decimals)');
    else signupCredit = BigInt(m[1]!) * 10_000_000n + BigInt((m[2] ?? '').padEnd(7, '0'));
  }
  const logLevel = (options.logLevel ?? (env.FAREBOX_LOG_LEVEL || 'info')) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) problems.push(`FAREBOX_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  const metricsToken = options.metricsToken ?? (env.FAREBOX_METRICS_TOKEN || undefined);
  if (metricsToken !== undefined && metricsToken.length < 16) problems.push('FAREBOX_METRICS_TOKEN must be at least 16 characters');
  let metricsAddress: { host: string; port: number } | undefined;
  const metricsAddr = options.metricsAddress ?? (env.FAREBOX_METRICS_ADDR || undefined);
  if (metricsAddr !== undefined) {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(metricsAddr);
    if (!m || Number(m[2]) > 65535) problems.push('FAREBOX_METRICS_ADDR must be host:port, e.g. 127.0.0.1:9464');
    else metricsAddress = { host: m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
  }
  const catalogStaleMs = int(options.catalogStaleMs ?? env.FAREBOX_CATALOG_STALE_MS, 'FAREBOX_CATALOG_STALE_MS', problems) ?? 60_000;
  const allowedHosts = new Set<string>();
  if (publicOrigin) allowedHosts.add(new URL(publicOrigin).host.toLowerCase());
  for (const raw of options.allowedHosts ?? (env.FAREBOX_ALLOWED_HOSTS ?? '').split(',')) {
    const h = raw.trim().toLowerCase();
    if (!h) continue;
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?$/.test(h)) problems.push(`FAREBOX_ALLOWED_HOSTS: "${raw.trim()}" is not a host[:port]`);
    else allowedHosts.add(h);
  }

  // Where money is real, an unsafe setting is refused at start (docs/production.md).
  if (network === 'mainnet') {
    const databaseUrl = options.databaseUrl ?? env.DATABASE_URL;
    if (!databaseUrl && !allowEmbeddedDb) problems.push('mainnet needs DATABASE_URL (a PostgreSQL server): embedded PGlite runs without fsync; set FAREBOX_ALLOW_EMBEDDED_DB=true to accept that');
    if (publicOrigin.startsWith('http:')) problems.push('mainnet needs an https FAREBOX_BASE_URL (session cookies and OAuth redirects travel over it)');
    if (freeTopupsSetting === true) problems.push('FAREBOX_FREE_TOPUPS=true is refused on mainnet: top-ups must be paid on chain');
    if (allowLoopbackEndpoints) problems.push('FAREBOX_ALLOW_LOOPBACK_ENDPOINTS=true is refused on mainnet');
    if (signupText === undefined) problems.push('mainnet needs FAREBOX_SIGNUP_CREDIT set explicitly (USD given to each new account; 0 allowed)');
  }
  if (network !== 'local' && !env.FAREBOX_KEYSTORE_KEY && !options.keystoreKeyProvided) {
    problems.push(`${network} needs FAREBOX_KEYSTORE_KEY (32 bytes, hex or base64): wallet secrets must not be encrypted with a key file stored beside them`);
  }
  if (problems.length) throw new ConfigError(problems);
  return {
    warnings: options.network === undefined ? named.warnings : [],
    logLevel,
    metricsToken,
    metricsAddress,
    catalogStaleMs,
    port,
    allowedHosts: [...allowedHosts],
    allowLoopbackEndpoints,
    freeTopups,
    signupCredit,
    baseUrl: baseUrlText,
    publicOrigin,
    dataDir: resolve(options.dataDir ?? env.FAREBOX_DATA_DIR ?? './.farebox'),
    databaseUrl: options.databaseUrl ?? (env.DATABASE_URL || undefined),
    databaseSchema: options.databaseSchema,
    databasePoolSize,
    credentialCacheMs,
    network,
    devnetUrl: (options.devnetUrl ?? env.FAREBOX_DEVNET_URL ?? `${baseUrlText}/devnet`).replace(/\/+$/, ''),
    callTimeoutMs,
    holdTimeoutMs,
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
  };
}
