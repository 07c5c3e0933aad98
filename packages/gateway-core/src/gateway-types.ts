import type { SearchIndex } from '@farebox/discovery';
import type { Database, Ledger } from '@farebox/ledger';
import type { CatalogMirror, NetworkConfig, RegistryClient } from '@farebox/stellar';
import type { LocalKeystore } from '@farebox/wallets';
import type { Accounts, Principal } from './auth/accounts.js';
import type { CallAnswer, CallOptions } from './calls.js';
import type { Clock } from './clock.js';
import type { GatewayConfig, GatewayOptions } from './config.js';
import type { OAuthOptions, OAuthServer } from './oauth/server.js';
import type { checkAccess } from './oauth/scopes.js';
import type { Logger } from './observability/log.js';
import type { Metrics } from './observability/metrics.js';
import type { Operator } from './operator/index.js';
import type { RateLimitStore } from './security/rate-limit.js';
import type { Settlement } from './settlement/index.js';
import type { AccountService } from './services/account.js';
import type { CatalogService } from './services/catalog.js';
import type { PlatformService } from './services/platform.js';
import type { PublisherService } from './services/publisher.js';

/**
 * What `createGateway` takes: the settings (typed options, validated at
 * construction) or a configuration the host has already validated (`config`),
 * and the parts a host or a test may bring. No environment: the host reads it
 * (`configFromEnv` in apps/gateway).
 */
export interface CreateGatewayOptions extends GatewayOptions {
  /**
   * A configuration already validated by `resolveGatewayConfig` (the gateway
   * host's `configFromEnv`). When given, the settings above are not read again.
   */
  config?: GatewayConfig;
  /** Wallet provider; default the local encrypted keystore in `dataDir/keystore`. */
  wallets?: LocalKeystore;
  /** Shared rate-limit store (Redis for several gateways); default in memory. */
  rateLimitStore?: RateLimitStore;
  /** An already opened database (tests share one). */
  database?: Database;
  /** Search index; default hybrid with the model from `modelDir`, keyword-only without one. */
  searchIndex?: SearchIndex;
  /** Structured logger (pino); default JSON lines on stdout at `logLevel` (info). */
  logger?: Logger;
  /** Log sink for background problems (default: warnings through `logger`). */
  log?: (message: string, err?: unknown) => void;
  /** OAuth token lifetimes, clock and /mcp origins. */
  oauth?: OAuthOptions;
  /**
   * Test hook, for the crash tests only (their entry script passes it; the
   * gateway's own entry never does): called at each named point of a payment
   * (`topup:signed`, `topup:submitted`, the settlement engine's points, the x402
   * facilitator's `x402:intent` and `x402:settled`, the webhook worker's `webhook:claimed`), where
   * a test stops the process.
   */
  crashPoint?: (name: string) => void;
  /**
   * The gateway's clock, epoch milliseconds (default `Date.now`): call
   * certificates (issue time, freshness), sessions, OAuth codes and tokens,
   * spending days, the settlement interval, readiness; holds (stamped and
   * reaped by the database's time) move by how far it runs ahead of the
   * machine's. Tests pass one they can move (see clock.ts).
   */
  now?: Clock;
}

/** `POST /v1/call` options: the caller's idempotency key, cost ceiling, approval and request id (call-types.ts). */
export type { CallOptions };

/** Platform-signed calls. */
export interface CallService {
  /** Validation errors throw before anything is charged; service failures answer 500 after the refund. */
  call(principal: Principal, body: unknown, opts?: CallOptions): Promise<CallAnswer>;
}

/**
 * The gateway: what the HTTP host (and the tests) reach. Built by
 * `createGateway`; the four services hold the API's operations, the rest are
 * the parts they are made of.
 */
export interface GatewayCore {
  readonly config: GatewayConfig;
  readonly network: NetworkConfig;
  readonly ledger: Ledger;
  readonly db: Database;
  readonly registry: RegistryClient;
  readonly mirror: CatalogMirror;
  readonly searchIndex: SearchIndex;
  readonly wallets: LocalKeystore;
  readonly treasuryAddress: string;
  /** The key services verify the platform's call certificates with. */
  readonly platformPublicKey: string;
  readonly rateLimits: RateLimitStore;
  /** Sign-up, sign-in, sessions, API keys. */
  readonly accounts: Accounts;
  /** Constant-time comparison of two secrets. */
  safeEqual(a: string, b: string): boolean;
  readonly settlement: Settlement;
  /** Structured logger and Prometheus metrics (observability/). */
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** Operator tools: disputes, treasury, settlement health, revenue, audit (operator/index.ts). */
  readonly operator: Operator;
  /** One pass of the wallet-credit audit (it also runs at start and every 5 minutes): logs and sets `farebox_wallet_credit_problems`. */
  auditWalletCredits(): Promise<void>;
  /** One pass of the hold reaper (it also runs every 10 s): voids the holds past their timeout (left by a crash or a hung call); the ids it voided. */
  reapExpiredHolds(): Promise<{ voided: string[] }>;
  /** The OAuth authorization server (routes in apps/gateway). */
  readonly oauth: OAuthServer;
  /** The /v1 access rule: whether the credential (OAuth token, spend or manage key, session) reaches the operation. */
  checkAccess: typeof checkAccess;
  /** The principal of an API key or an OAuth access token. */
  authenticateBearer(token: string): Promise<Principal | undefined>;
  readonly account: AccountService;
  readonly catalog: CatalogService;
  /** Each service's health from the calls that reached it (health/index.ts); `sync()` writes and reads the counts now. */
  readonly serviceHealth: import('./health/index.js').ServiceHealthRecorder;
  /** The x402 bazaar catalog: every service as an x402 resource (services/bazaar.ts). */
  readonly bazaar: import('./services/bazaar.js').BazaarService;
  readonly calls: CallService;
  /** The OAuth connections with their confirmation thresholds (oauth/confirmations.ts). */
  readonly oauthConnections: import('./oauth/confirmations.js').ConnectionsWithThresholds;
  /** Paid calls the user confirms: thresholds of OAuth connections and approvals of single calls (oauth/confirmations.ts). */
  readonly callConfirmations: import('./oauth/confirmations.js').CallConfirmations;
  /** The spending policy of the principal's API key or connection and its budget now (null without one). */
  spendingPolicy(principal: Principal): Promise<import('./auth/policy.js').PolicyView | null>;
  readonly publisher: PublisherService;
  readonly platform: PlatformService;
  /** Signed webhooks: endpoints, secrets, the delivery log and the delivery worker (webhooks/, docs/webhooks.md). */
  readonly webhooks: import('./webhooks/index.js').Webhooks;
  /** The x402 facilitator's reconciler of interrupted settlements, and the crash tests' hook (x402/index.ts). */
  readonly x402: import('./x402/index.js').X402Runtime;
  /** MPP channel sessions: `calls` when they are on (config.mpp), else undefined. */
  readonly mpp: import('./mpp/index.js').MppRuntime;
  /** Starts following the registry (and indexing it), settlement and the background jobs. Resolves after the first sync. */
  start(): Promise<void>;
  close(): Promise<void>;
}
