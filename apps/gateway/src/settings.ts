import { defineSettings, flagSetting, intSetting, listSetting, oneOfSetting, settingKind, SHARED_SETTINGS, textSetting, urlSetting } from '@farebox/protocol';
import { MONEY_SETTINGS } from './settings-money.js';

/**
 * Every variable `farebox-gateway` reads, declared once: meaning, default,
 * the values it takes and how its text is parsed (zod, through
 * `@farebox/protocol`'s setting kinds). `configFromEnv` (config.ts) reads the
 * environment against it, and docs/configuration.md is generated from it
 * (`pnpm docs:config`). Checks that depend on other settings (the network,
 * mainnet's rules) are `resolveGatewayConfig`'s, in `@farebox/gateway-core`.
 */
const { STELLAR_NETWORK, FAREBOX_NETWORK } = SHARED_SETTINGS;
const network = textSetting('`local`, `testnet` or `mainnet`');
/** gateway-core's `LOG_LEVELS`, written out so that the docs generator loads no gateway (test/settings.test.ts compares them). */
export const LOG_LEVEL_NAMES = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** `FAREBOX_TRUST_PROXY`: `true`, `false`, a hop count, or addresses and subnets (read as express reads `trust proxy`). */
const trustProxy = settingKind<boolean | number | string>('`true`, `false`, a number of proxies, or comma-separated addresses or subnets', (text) =>
  text === 'true' ? true : text === 'false' ? false : /^\d+$/.test(text) ? Number(text) : text,
);

export const GATEWAY_SETTINGS = defineSettings({
  HOST: { meaning: 'The address the gateway listens on.', kind: textSetting('an address or host name'), default: '`127.0.0.1`' },
  PORT: { meaning: 'The port the gateway listens on (0: any free port).', kind: intSetting({ min: 0, max: 65535 }), default: '`8787`' },
  FAREBOX_BASE_URL: {
    meaning:
      'The public address: OAuth redirects, `Host`/`Origin` checks and links are built from it, and `https` turns on Secure cookies. Required as `https` on `mainnet`.',
    kind: textSetting('an absolute http(s) URL'),
    default: '`http://127.0.0.1:{PORT}`',
  },
  FAREBOX_DATA_DIR: {
    ...SHARED_SETTINGS.FAREBOX_DATA_DIR,
    meaning: 'The data folder: the embedded PGlite database, the keystore, the catalog cursor and the embedded devnet.',
  },
  DATABASE_URL: {
    meaning: 'A PostgreSQL server instead of the embedded PGlite (one process, no fsync): required on `mainnet` unless `FAREBOX_ALLOW_EMBEDDED_DB=true`.',
    kind: textSetting('a `postgres://` URL'),
    default: 'unset: PGlite in `$FAREBOX_DATA_DIR/db`',
    secret: true,
  },
  FAREBOX_DB_POOL_SIZE: {
    meaning: 'PostgreSQL connections per gateway (with `DATABASE_URL`).',
    kind: intSetting({ min: 1, label: 'databasePoolSize' }),
    fallback: 10,
  },
  FAREBOX_REDIS_URL: {
    meaning: 'A Redis server shared by several gateways: rate limits and credential revocations are counted there (docs/deploy.md).',
    kind: settingKind('a `redis://` or `rediss://` URL', (text, name, problem) =>
      /^rediss?:\/\/[^/]/.test(text) ? text : problem(`${name} must be a redis:// or rediss:// URL`),
    ),
    default: 'unset: in memory, one gateway',
    secret: true,
  },
  FAREBOX_CREDENTIAL_CACHE_MS: {
    meaning:
      "How long an API key's principal is served from memory; a revocation drops it at once, on every gateway sharing `FAREBOX_REDIS_URL`. 0 turns the cache off.",
    kind: intSetting({ min: 0, label: 'credentialCacheMs' }),
    values: 'an integer from 0 to 60000 (ms)',
    fallback: 5000,
  },
  FAREBOX_TRUST_PROXY: {
    meaning:
      "Which proxies to believe behind a reverse proxy (`true`, a hop count, or addresses and subnets, as express's `trust proxy`), so that per-IP limits see the client's address, not the proxy's, and `X-Forwarded-Proto` says whether the client used TLS.",
    kind: trustProxy,
    default: '`false`',
  },
  FAREBOX_ALLOWED_HOSTS: {
    meaning: 'More names the cookie and OAuth routes answer for, besides the host of `FAREBOX_BASE_URL` (a DNS-rebinding page cannot use them).',
    kind: listSetting('comma-separated `host[:port]`'),
    default: 'unset',
  },
  FAREBOX_MCP_ALLOWED_ORIGINS: {
    meaning: "Origins allowed to call `/mcp` from a browser, besides the gateway's own.",
    kind: listSetting('comma-separated origins (`https://host[:port]`)'),
    default: 'unset',
  },
  FAREBOX_LOG_LEVEL: {
    meaning: "What is logged; logs are JSON lines on stdout (docs/operations.md). `debug` adds the stack's own traffic (devnet polling, health probes).",
    kind: oneOfSetting(LOG_LEVEL_NAMES, (name) => `${name} must be one of ${LOG_LEVEL_NAMES.join(', ')}`),
    default: '`info`',
  },
  FAREBOX_LOG_PRETTY: {
    meaning: 'One short readable line per event instead of JSON (docs/operations.md); `npm start` sets `true`.',
    kind: flagSetting(),
    default: '`true` on a terminal, else `false`',
  },
  NO_COLOR: { meaning: 'Set (to anything): readable log lines without colours.', kind: textSetting('any text'), default: 'unset' },
  FORCE_COLOR: {
    meaning: 'Readable log lines in colour even off a terminal (the program reading them shows them on one, as `npm start` does); `0` does not.',
    kind: textSetting('any text'),
    default: 'unset',
  },
  FAREBOX_METRICS_TOKEN: {
    meaning: 'The bearer token that turns on `GET /metrics` (Prometheus); without it (and without `FAREBOX_METRICS_ADDR`) `/metrics` is off.',
    kind: textSetting('at least 16 characters'),
    default: 'unset (off)',
    secret: true,
  },
  FAREBOX_METRICS_ADDR: {
    meaning: 'A separate address serving only `/metrics`, without a token (a private interface).',
    kind: textSetting('`host:port`, e.g. `127.0.0.1:9464`'),
    default: 'unset',
  },
  FAREBOX_CATALOG_STALE_MS: {
    meaning:
      '`/health/ready` names the catalog degraded (or fails, when `FAREBOX_READY_REQUIRES` names `catalog`) when the mirror has not read the registry for this long.',
    kind: intSetting({ min: 1 }),
    fallback: 60000,
  },
  FAREBOX_READY_REQUIRES: {
    meaning:
      'Dependencies whose being down makes `/health/ready` answer 503 instead of `degraded`, besides the database; each must be in use on this gateway (docs/operations.md).',
    kind: listSetting('comma-separated: `redis`, `rpc`, `horizon`, `catalog`, `discovery`, `model`, `escrow`'),
    default: 'unset (the database only)',
  },
  STELLAR_NETWORK: { ...STELLAR_NETWORK, kind: network },
  FAREBOX_NETWORK: { ...FAREBOX_NETWORK, kind: network },
  FAREBOX_DEVNET_URL: {
    ...SHARED_SETTINGS.FAREBOX_DEVNET_URL,
    meaning: 'An external devnet for the `local` network, instead of the one the gateway embeds.',
    default: '`{FAREBOX_BASE_URL}/devnet` (embedded)',
  },
  FAREBOX_DEVNET_PASSPHRASE: SHARED_SETTINGS.FAREBOX_DEVNET_PASSPHRASE,
  STELLAR_RPC_URL: SHARED_SETTINGS.STELLAR_RPC_URL,
  STELLAR_HORIZON_URL: SHARED_SETTINGS.STELLAR_HORIZON_URL,
  STELLAR_FRIENDBOT_URL: SHARED_SETTINGS.STELLAR_FRIENDBOT_URL,
  STELLAR_CONTRACT_ID: SHARED_SETTINGS.STELLAR_CONTRACT_ID,
  STELLAR_USDC_ISSUER: SHARED_SETTINGS.STELLAR_USDC_ISSUER,
  STELLAR_NETWORK_PASSPHRASE: SHARED_SETTINGS.STELLAR_NETWORK_PASSPHRASE,
  STELLAR_EXPLORER_URL: SHARED_SETTINGS.STELLAR_EXPLORER_URL,
  FAREBOX_CALL_TIMEOUT_MS: {
    meaning: 'How long a service may take to answer a call, in ms.',
    kind: intSetting({ min: 1, label: 'callTimeoutMs' }),
    fallback: 30000,
  },
  FAREBOX_HOLD_TIMEOUT_MS: {
    meaning: 'Holds older than this (ms) are voided by the reaper.',
    kind: intSetting({ min: 1, label: 'holdTimeoutMs' }),
    values: 'an integer above the call timeout',
    default: '2 × the call timeout + 30000',
  },
  FAREBOX_DB_OUTAGE_WAIT_MS: {
    meaning:
      'How long a caller whose service answered waits for an unreachable database to record the charge, before the `503` that says the charge is pending (docs/api.md); 0 answers at once.',
    kind: intSetting({ min: 0, label: 'dbOutageWaitMs' }),
    fallback: 15000,
  },
  FAREBOX_LIVENESS_INTERVAL_MS: {
    meaning: 'How often this gateway beats in the database it shares with other gateways, and checks theirs (ms).',
    kind: intSetting({ min: 50, label: 'livenessIntervalMs' }),
    fallback: 2000,
  },
  FAREBOX_LIVENESS_TIMEOUT_MS: {
    meaning:
      'A gateway whose beats stop for this long (ms) is dead: a live one voids its holds and ends its idempotency leases. What a dead gateway held is back within this plus one interval.',
    kind: intSetting({ min: 1, label: 'livenessTimeoutMs' }),
    values: 'an integer, at least 2 × the liveness interval',
    default: '`10000` (at least 2 × the interval)',
  },
  FAREBOX_MAX_PRICE_MULTIPLE: {
    meaning: "How much a dynamic price may exceed the service's registry floor, as a multiple.",
    kind: intSetting({ min: 1, label: 'maxPriceMultiple' }),
    fallback: 100,
  },
  FAREBOX_AUTH_RATE_LIMIT: { meaning: 'Sign-ups and sign-ins per minute and IP.', kind: intSetting({ min: 1, label: 'authPerMinute' }), fallback: 20 },
  FAREBOX_ACCOUNT_RATE_LIMIT: { meaning: 'Requests per minute and account.', kind: intSetting({ min: 1, label: 'accountPerMinute' }), fallback: 6000 },
  FAREBOX_OAUTH_CLIENT_RATE_LIMIT: {
    meaning: 'Requests per minute and OAuth client (all its tokens together).',
    kind: intSetting({ min: 1, label: 'oauthClientPerMinute' }),
    fallback: 30000,
  },
  FAREBOX_ANONYMOUS_RATE_LIMIT: {
    meaning:
      'Requests per minute and IP without a credential: sign-up, sign-in, OAuth, the x402 bazaar `/discovery/*`, an owner\'s earnings (docs/api.md, "Routes without a credential", lists them; `GET /v1/agents` needs a key).',
    kind: intSetting({ min: 1, label: 'anonymousPerMinute' }),
    fallback: 300,
  },
  FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: {
    meaning:
      "Services may be registered on loopback addresses, plain http allowed there (never the gateway's own ports: the one it listens on, the one of `FAREBOX_BASE_URL`, the one of `FAREBOX_METRICS_ADDR`); refused on `mainnet`. `npm start` and `farebox dev` set `true`.",
    kind: flagSetting(),
    default: '`false`',
  },
  FAREBOX_FREE_TOPUPS: {
    meaning: "Unpaid top-ups (a devnet faucet); refused on `mainnet`, where top-ups are paid in USDC from the account's wallet.",
    kind: flagSetting(),
    default: '`true` on `local`, else `false`',
  },
  FAREBOX_SIGNUP_CREDIT: {
    meaning: 'USD credited to each new account; must be set on `mainnet` (0 allowed): credits buy calls the treasury pays publishers for.',
    kind: textSetting('a USD amount from 0 to 1000, at most 7 decimals'),
    default: '`5` (none on `mainnet`)',
  },
  FAREBOX_ALLOW_EMBEDDED_DB: {
    meaning: 'Lets a `mainnet` gateway run on embedded PGlite (no fsync: a machine crash can lose the last transactions).',
    kind: flagSetting(),
    default: '`false`',
  },
  FAREBOX_KEYSTORE_KEY: {
    meaning:
      "The key that encrypts every wallet secret in the database, the treasury's included; required off the `local` network (without it a key file is generated beside the data it protects).",
    kind: textSetting('32 bytes: 64 hex characters or base64'),
    default: 'a generated key file (`local` only)',
    secret: true,
  },
  FAREBOX_PLATFORM_SECRET: {
    meaning: "The platform's certificate key, imported into the keystore at start.",
    kind: textSetting('an `S...` secret'),
    default: 'generated and kept in the keystore',
    secret: true,
  },
  FAREBOX_TREASURY_SECRET: {
    meaning: "The treasury's key, imported into the keystore at start.",
    kind: textSetting('an `S...` secret'),
    default: 'generated and kept in the keystore',
    secret: true,
  },
  FAREBOX_DISCOVERY_URL: {
    meaning: 'A discovery backend (`farebox-discovery`) that ranks searches, instead of the in-process index (docs/deploy.md).',
    kind: urlSetting(),
    default: 'unset: the in-process index',
  },
  FAREBOX_MODEL_DIR: SHARED_SETTINGS.FAREBOX_MODEL_DIR,
  FAREBOX_ALLOW_MODEL_DOWNLOAD: SHARED_SETTINGS.FAREBOX_ALLOW_MODEL_DOWNLOAD,
  FAREBOX_MODEL_HUB_URL: SHARED_SETTINGS.FAREBOX_MODEL_HUB_URL,
  ...MONEY_SETTINGS,
});
