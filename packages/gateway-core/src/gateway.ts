import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { attachToCatalog, createEmbedder, createSearchIndex, type CatalogAttachment, type SearchIndex } from '@farebox/discovery';
import { Ledger, migrate, migrateLedger, openDatabase, parseTopupAmount, type Database } from '@farebox/ledger';
import { amountFields, ConfigError, PLATFORM_FEE_PCT, toJsonInteger, toUsd, type Ed25519Signer } from '@farebox/protocol';
import {
  createAccounts as createStellarAccounts,
  createCatalogMirror,
  createRegistryClient,
  FileCursorStore,
  resolveNetwork,
  type CatalogMirror,
  type NetworkConfig,
  type RegistryAgent,
  type RegistryClient,
} from '@farebox/stellar';
import { createLocalKeystore, walletSigner, type LocalKeystore } from '@farebox/wallets';
import { createAccounts, type Accounts, type Principal, type User } from './auth/accounts.js';
import { CredentialCache } from './auth/credential-cache.js';
import { RedisInvalidationBus } from './auth/redis-invalidation.js';
import { safeEqual } from './auth/tokens.js';
import { createCalls, type CallableService, type CallResponse, type CallSummary, type CreditsPort } from './calls.js';
import { createManifests } from './manifests.js';
import { checkOAuthAccess } from './oauth/scopes.js';
import { createOAuth, type OAuthOptions } from './oauth/server.js';
import { createSpendingLimits } from './oauth/spending.js';
import { createSettlement } from './settlement/index.js';
import { createWalletPath } from './wallet-path.js';
import { createTopups } from './topups.js';
import { createWalletProvisioning } from './wallet-provisioning.js';
import { createOperator, resolveOperatorConfig, type Operator } from './operator/index.js';
import { resolveSettlementConfig, type SettlementConfigOptions } from './settlement/config.js';
import { resolveGatewayConfig, type GatewayConfig, type GatewayOptions } from './config.js';
import { GatewayError } from './errors.js';
import { toGatewayError, translated } from './ledger-errors.js';
import { checkEndpoint, type EndpointPolicy } from './security/endpoint-guard.js';
import { MemoryRateLimitStore, type RateLimitStore } from './security/rate-limit.js';
import { RedisRateLimitStore } from './security/redis-rate-limit.js';
import { DbKeystoreStorage } from './keystore-db.js';
import { Redis } from 'ioredis';
import { balanceView, intParam, serviceView, transactionView, type WalletStatus } from './views.js';
import { createLogger, legacySink, type Logger } from './observability/log.js';
import { CALL_STEP_METRIC, createMetrics, type Metrics } from './observability/metrics.js';
import { rpc as StellarRpc } from '@stellar/stellar-sdk';

export const GATEWAY_MIGRATIONS_DIR = fileURLToPath(new URL('../migrations/', import.meta.url));

export interface CreateGatewayOptions extends GatewayOptions {
  /** Wallet provider; default the local encrypted keystore in `dataDir/keystore`. */
  wallets?: LocalKeystore;
  /** Shared rate-limit store (Redis for several gateways); default in memory. */
  rateLimitStore?: RateLimitStore;
  /** An already opened database (tests share one). */
  database?: Database;
  /** Search index; default hybrid with the model from `FAREBOX_MODEL_DIR`, keyword-only without one. */
  searchIndex?: SearchIndex;
  /** Structured logger (pino); default JSON lines on stdout at `FAREBOX_LOG_LEVEL` (info). */
  logger?: Logger;
  /** Log sink for background problems (default: warnings through `logger`). */
  log?: (message: string, err?: unknown) => void;
  /** OAuth token lifetimes, clock and /mcp origins. */
  oauth?: OAuthOptions;
  /** Settlement intervals and escrow provider (else `FAREBOX_SETTLEMENT_INTERVAL`, `FAREBOX_FUNDING_INTERVAL`, `TRUSTLESS_WORK_URL`, `TRUSTLESS_WORK_API_KEY`). */
  settlement?: SettlementConfigOptions;
}

const RegisterSchema = z.strictObject(
  {
    service: z.string({ error: 'service required' }).min(1, 'service required').max(32, 'service name too long (max 32)'),
    pricePerCallLamports: z
      .number({ error: 'pricePerCallLamports required (integer base units)' })
      .int('pricePerCallLamports must be an integer (base units)')
      .positive('pricePerCallLamports must be greater than 0')
      .max(Number.MAX_SAFE_INTEGER, 'pricePerCallLamports too large'),
    endpoint: z.string({ error: 'endpoint required' }).min(1, 'endpoint required').max(256, 'endpoint too long (max 256)'),
    description: z.string({ error: 'description required' }).max(512, 'description too long (max 512)'),
  },
  { error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown field: ${iss.keys.join(', ')}` : undefined) },
);

const UpdateSchema = z.strictObject(
  {
    pricePerCallLamports: RegisterSchema.shape.pricePerCallLamports.optional(),
    endpoint: RegisterSchema.shape.endpoint.optional(),
    description: RegisterSchema.shape.description.optional(),
  },
  { error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown field: ${iss.keys.join(', ')}` : undefined) },
);

const TopupSchema = z.strictObject({ amount: z.unknown().optional() }, { error: (iss) => (iss.code === 'unrecognized_keys' ? `unknown field: ${iss.keys.join(', ')}` : undefined) });

function parse<T>(schema: z.ZodType<T>, input: unknown): T {
  const r = schema.safeParse(input ?? {});
  if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
  return r.data;
}

/**
 * Validates every setting before anything starts (the gateway's own, the
 * settlement network's, settlement's and the operators') and reports every
 * problem together.
 */
function checkConfiguration(options: CreateGatewayOptions, env: Record<string, string | undefined>): GatewayConfig {
  const problems: string[] = [];
  const collect = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
      return undefined;
    }
  };
  const config = collect(() => resolveGatewayConfig({ ...options, ...(options.wallets ? { keystoreKeyProvided: true } : {}) }));
  // When the gateway's own settings are wrong, the others are still checked (against the named network).
  const named = options.network ?? env.FAREBOX_NETWORK ?? env.STELLAR_NETWORK;
  const networkName = config?.network ?? (named === 'testnet' || named === 'mainnet' ? named : 'local');
  const devnetUrl = config?.devnetUrl ?? 'http://127.0.0.1/devnet';
  collect(() => resolveNetwork({ network: networkName, devnetUrl, env }));
  collect(() => resolveSettlementConfig(options.settlement ?? {}, env, networkName, devnetUrl));
  collect(() => resolveOperatorConfig(env));
  if (!config || problems.length) throw new ConfigError(problems);
  return config;
}

/**
 * Builds the gateway: database (PGlite or PostgreSQL) with migrations, the
 * ledger, wallets, the platform keys, the settlement network adapters, the
 * catalog mirror and search, and the operations the HTTP host exposes.
 */
export async function createGateway(options: CreateGatewayOptions = {}) {
  const env = options.env ?? process.env;
  const config: GatewayConfig = checkConfiguration(options, env);
  const logger: Logger = options.logger ?? createLogger({ level: config.logLevel });
  const log = options.log ?? legacySink(logger);
  const metrics: Metrics = createMetrics();
  // Keys, wallets and the database live here: readable by this user only (docs/production.md).
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });

  const db = options.database ?? (await openDatabase({ url: config.databaseUrl, dataDir: join(config.dataDir, 'db'), poolSize: config.databasePoolSize, ...(config.databaseSchema ? { schema: config.databaseSchema } : {}), env }));
  await migrateLedger(db);
  await migrate(db, GATEWAY_MIGRATIONS_DIR, 'gateway');
  const ledger = new Ledger(db, { signupCredit: config.signupCredit });
  const oauth = createOAuth({ db, baseUrl: config.baseUrl, env, ...options.oauth });
  const spending = createSpendingLimits({ db, ...(options.oauth?.now ? { now: options.oauth.now } : {}) });

  // Secrets live encrypted in the database (shared by every gateway on it); the
  // key comes from FAREBOX_KEYSTORE_KEY or a key file in the data directory.
  const wallets = options.wallets ?? (await createLocalKeystore({ dir: join(config.dataDir, 'keystore'), storage: new DbKeystoreStorage(db), env }));
  if (env.FAREBOX_PLATFORM_SECRET) await wallets.import('platform:certificate', env.FAREBOX_PLATFORM_SECRET);
  if (env.FAREBOX_TREASURY_SECRET) await wallets.import('platform:treasury', env.FAREBOX_TREASURY_SECRET);
  await wallets.create('platform:certificate');
  const treasuryAddress = await wallets.create('platform:treasury');
  const certificateSigner: Ed25519Signer = await wallets.ed25519Signer('platform:certificate');

  const network: NetworkConfig = resolveNetwork({ network: config.network, devnetUrl: config.devnetUrl, env });
  const registry: RegistryClient = createRegistryClient(network);
  const chain = createStellarAccounts(network);
  const settlementLog = (m: string, e?: unknown) => {
    operator?.noteSettlementFailure(m, e);
    metrics.settlementFailures.inc();
    metrics.settlementLastFailure.set(Date.now() / 1000);
    logger.warn({ event: 'settlement', err: e }, m);
  };
  const settlement = createSettlement({ ledger, db, network, networkName: config.network, devnetUrl: config.devnetUrl, treasury: walletSigner(wallets, treasuryAddress), ...(options.settlement ? { options: options.settlement } : {}), env, log: settlementLog, onStep: (st) => logger.info({ event: 'settlement', ...st }, `settlement cycle ${st.cycleId}: ${st.from} -> ${st.to}`) });
  // Test hook (`FAREBOX_TEST_CRASH_AT`): the crash tests kill the process at a named point.
  const crashPoint = (name: string) => {
    if (settlement.settings.crashAt === name) process.kill(process.pid, 'SIGKILL');
  };
  const operator: Operator = createOperator({ db, ledger, network, settlement, treasury: walletSigner(wallets, treasuryAddress), env, log });
  // Registered endpoints never reach the gateway itself: its listening port and public origin are refused.
  const publicPort = Number(new URL(config.publicOrigin).port || (config.publicOrigin.startsWith('https:') ? 443 : 80));
  // (The metrics listener, FAREBOX_METRICS_ADDR, answers without a token: its port is the gateway's too.)
  const ownPorts = [config.port, publicPort, ...(config.metricsAddress ? [config.metricsAddress.port] : [])];
  const policy: EndpointPolicy = { allowLoopback: config.allowLoopbackEndpoints, ownPorts: [...new Set(ownPorts)], ownOrigin: config.publicOrigin };
  // Several gateways share rate limits through Redis (FAREBOX_REDIS_URL); one gateway keeps them in memory.
  let redis: Redis | undefined;
  let rateLimits: RateLimitStore = options.rateLimitStore ?? new MemoryRateLimitStore();
  if (!options.rateLimitStore && env.FAREBOX_REDIS_URL) {
    redis = new Redis(env.FAREBOX_REDIS_URL, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    redis.on('error', () => undefined);
    rateLimits = new RedisRateLimitStore(redis, { onError: (err) => log('redis unavailable: rate limits are not enforced until it is back', err) });
  }

  // ---- catalog mirror + search ------------------------------------------------
  const searchIndex =
    options.searchIndex ??
    createSearchIndex({ embedder: createEmbedder({ ...(env.FAREBOX_MODEL_DIR ? { modelDir: env.FAREBOX_MODEL_DIR } : {}), allowRemote: env.FAREBOX_ALLOW_MODEL_DOWNLOAD === 'true' }) });
  let attachment: CatalogAttachment<RegistryAgent> | undefined;
  const mirror: CatalogMirror = createCatalogMirror({
    registry,
    cursorStore: new FileCursorStore(join(config.dataDir, `catalog-${network.name}.json`)),
    onChange: (change) => attachment?.handle(change),
    onError: (err) => log('catalog sync failed (will retry)', err),
  });

  // ---- credits -----------------------------------------------------------------
  const credits: CreditsPort = {
    hold: (i) =>
      translated(async () => ({
        holdId: (await ledger.hold(i.accountId, i.amount, { callId: i.callId, service: i.service, timeoutMs: config.holdTimeoutMs, ...(i.idempotencyKey ? { idempotencyKey: i.idempotencyKey } : {}) })).hold.id,
      })),
    post: (holdId, i) => translated(async () => {
      const r = await ledger.post(holdId, i);
      return { balance: r.balance, posted: r.hold.state === 'posted' };
    }),
    void: (holdId, reason) => translated(async () => ({ balance: (await ledger.void(holdId, reason)).balance })),
    idempotent: (accountId, key, hash, fn) =>
      translated(async () => {
        const r = await ledger.withIdempotency<CallResponse>(accountId, key, hash, fn);
        if (r.replayed) metrics.idempotencyReplays.inc();
        return r.response;
      }),
  };

  async function resolveService(name: string): Promise<CallableService | undefined> {
    const agent = mirror.get(name) ?? (await registry.getAgent(name).catch(() => null)) ?? undefined;
    return agent ? { service: agent.service, owner: agent.owner, pricePerCall: agent.pricePerCall, endpoint: agent.endpoint } : undefined;
  }

  const topups = createTopups({
    ledger,
    wallets,
    network,
    treasuryAddress,
    probe: settlement.probe,
    mode: config.freeTopups ? 'free' : 'wallet',
    walletUsdc: async (a) => {
      const b = await chain.balances(a);
      return b.exists && b.usdc !== null ? b.usdc : null;
    },
    crashPoint,
    log,
  });
  const walletPath = settlement.escrow
    ? createWalletPath({ ledger, wallets, network, escrow: settlement.escrow, topups, treasuryAddress, policy, walletBalance: async (a) => (await chain.balances(a)).usdc ?? 0n, log })
    : undefined;
  /** One log line and the metrics of each paid call. */
  const callFinished = (c: CallSummary) => {
    metrics.calls.inc({ outcome: c.outcome, paid_with: c.paidWith });
    metrics.callSteps.observe({ step: 'total' }, c.totalMs / 1000);
    const stepMs: Record<string, number> = {};
    for (const st of c.steps) {
      const name = CALL_STEP_METRIC[st.name];
      if (name) metrics.callSteps.observe({ step: name }, st.durationMs / 1000);
      stepMs[st.name] = (stepMs[st.name] ?? 0) + st.durationMs;
    }
    if (logger.isLevelEnabled('info')) {
      logger.info(
        { event: 'call', reqId: c.requestId, callId: c.callId, accountId: c.accountId, service: c.service, amount: c.amount.toString(), outcome: c.outcome, paidWith: c.paidWith, status: c.status, ms: c.totalMs, steps: stepMs, ...(c.error ? { error: c.error } : {}) },
        'call',
      );
    }
  };
  const calls = createCalls({ credits: spending.wrapCredits(credits), resolveService, signer: certificateSigner, policy, timeoutMs: config.callTimeoutMs, maxPriceMultiple: config.maxPriceMultiple, onFinished: callFinished, ...(walletPath
      ? {
          onInsufficientCredits: spending.wrapWalletPath(walletPath.onInsufficientCredits, (r) => 'response' in r && r.response.status === 200),
        }
      : {}) });

  const manifests = createManifests({ policy });

  // ---- wallets on chain ---------------------------------------------------------
  // A new account's wallet is set up by a durable job that starts at sign-up.
  const provisioning = createWalletProvisioning({
    db,
    chain,
    network,
    wallets,
    treasury: walletSigner(wallets, treasuryAddress),
    startingXlm: 20_000_000n,
    log,
  });

  const accounts: Accounts = createAccounts({
    db,
    wallets,
    onSignup: () => provisioning.kick(),
    cache: new CredentialCache({ ...(redis ? { bus: new RedisInvalidationBus(redis) } : {}), ttlMs: config.credentialCacheMs }),
    credits: {
      openAccount: async (id) => {
        await ledger.openAccount(id);
      },
    },
  });

  /** The wallet's USDC; `provisioning` until its set-up job has created it and set its trustline. */
  async function walletBalance(user: User): Promise<{ units: bigint; status: WalletStatus }> {
    try {
      const b = await chain.balances(user.walletAddress);
      if (!b.exists || b.usdc === null) return { units: 0n, status: 'provisioning' };
      return { units: b.usdc, status: 'ok' };
    } catch {
      return { units: 0n, status: 'unavailable' };
    }
  }

  async function balanceOf(user: User) {
    const [c, w] = await Promise.all([translated(() => ledger.balance(user.id)), walletBalance(user)]);
    return balanceView(c.balance, w.units, w.status);
  }

  async function serviceStatsByName(): Promise<Map<string, { calls: number; earned: bigint }>> {
    const owners = [...new Set(mirror.list().map((a) => a.owner))];
    const out = new Map<string, { calls: number; earned: bigint }>();
    for (const owner of owners) {
      for (const s of await ledger.serviceStats(owner)) out.set(`${owner}\u0000${s.service}`, { calls: s.calls, earned: s.earned });
    }
    return out;
  }

  async function ownedAgent(user: User, service: string): Promise<RegistryAgent> {
    const { rows } = await db.query<{ service: string }>('SELECT service FROM gw_services WHERE service = $1 AND user_id = $2 AND removed_at IS NULL', [service, user.id]);
    if (!rows[0]) throw new GatewayError('NOT_FOUND', 'service not found');
    const agent = await translated(() => registry.getAgent(service));
    if (!agent || agent.owner !== user.walletAddress) throw new GatewayError('NOT_FOUND', 'service not found');
    return agent;
  }

  /** Confirms a service this gateway just changed on chain and waits until search shows the change. */
  async function confirmed(service: string): Promise<RegistryAgent | undefined> {
    const agent = await translated(() => mirror.confirm(service));
    await attachment?.idle();
    return agent;
  }

  function requirePublisher(user: User) {
    if (!user.isPublisher) throw new GatewayError('FORBIDDEN', 'activate publishing first (POST /v1/publisher/activate)');
  }

  const reconcileTopups = () =>
    topups
      .reconcile()
      .then(({ credited, failed }) => {
        if (credited) metrics.topupsReconciled.inc({ result: 'credited' }, credited);
        if (failed) metrics.topupsReconciled.inc({ result: 'failed' }, failed);
        if (credited || failed) logger.warn({ event: 'topup-reconcile', credited, failed }, 'wallet top-ups settled by reconciliation');
      })
      .catch((err) => log('top-up reconciliation failed', err));
  const topupReconciler = setInterval(reconcileTopups, 30_000);
  topupReconciler.unref();

  const reaper = setInterval(() => {
    ledger
      .reapExpiredHolds()
      .then(({ voided }) => {
        if (!voided.length) return;
        metrics.reaperVoided.inc(voided.length);
        logger.warn({ event: 'reaper', voided: voided.length, holds: voided.slice(0, 20) }, 'reaper returned holds left by a crash or a hung call');
      })
      .catch((err) => log('reaper failed', err));
  }, Math.min(10_000, config.holdTimeoutMs));
  reaper.unref();

  const startedAt = Date.now();
  const rpc = new StellarRpc.Server(network.rpcUrl, { allowHttp: network.allowHttp });
  /** The network's latest ledger, asked at most every 2 s (readiness and metrics share it). */
  let latestLedger: { at: number; value: Promise<number> } | undefined;
  const networkLedger = (): Promise<number> => {
    if (!latestLedger || Date.now() - latestLedger.at > 2_000) {
      const value = rpc.getLatestLedger().then((r) => r.sequence);
      value.catch(() => (latestLedger = undefined));
      latestLedger = { at: Date.now(), value };
    }
    return latestLedger.value;
  };
  const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
    Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms).unref())]);
  metrics.observe({
    async holds() {
      const { rows } = await db.query<{ n: string; age: string | null }>(`SELECT count(*) AS n, extract(epoch FROM now() - min(created_at)) AS age FROM holds WHERE state = 'pending'`);
      return { pending: Number(rows[0]?.n ?? 0), oldestAgeSeconds: Number(rows[0]?.age ?? 0) };
    },
    async settlementCycles() {
      const { rows } = await db.query<{ state: string; n: string }>('SELECT state, count(*) AS n FROM settlement_cycles GROUP BY state');
      return rows.map((r) => ({ state: r.state, count: Number(r.n) }));
    },
    async treasury() {
      const [b, owed] = await Promise.all([
        withTimeout(chain.balances(treasuryAddress), 2_000, 'horizon'),
        db.query<{ owed: string }>(
          `SELECT COALESCE(sum(e.gross), 0) AS owed FROM earnings e
             LEFT JOIN settlement_cycles c ON c.id = e.cycle_id LEFT JOIN funding_batches f ON f.id = e.funding_batch_id
            WHERE (c.id IS NULL OR c.state NOT IN ('released', 'swept', 'done')) AND (f.id IS NULL OR f.state <> 'confirmed')`,
        ),
      ]);
      return { balance: b.usdc ?? 0n, owed: BigInt(owed.rows[0]?.owed ?? 0) };
    },
    async mirror() {
      const m = mirror.status();
      const latest = await withTimeout(networkLedger(), 2_000, 'rpc').catch(() => null);
      return { lagLedgers: latest !== null && m.syncedLedger !== null ? Math.max(0, latest - m.syncedLedger) : null, lastSyncAgeSeconds: m.lastSyncAt ? (Date.now() - m.lastSyncAt) / 1000 : null, failures: m.failures };
    },
    search: () => searchIndex.status(),
    pool: () => ({ total: db.pool.totalCount, idle: db.pool.idleCount, waiting: db.pool.waitingCount }),
    redis: () => (redis ? (redis.status === 'ready' ? 'ready' : 'down') : 'none'),
  });
  let mirrorStarted: Promise<void> | undefined;

  const core = {
    config,
    network,
    ledger,
    db,
    registry,
    mirror,
    searchIndex,
    wallets,
    treasuryAddress,
    platformPublicKey: certificateSigner.publicKey,
    rateLimits,
    accounts,
    safeEqual,
    settlement,
    /** Structured logger and Prometheus metrics (observability/). */
    logger,
    metrics,
    /** Operator tools: disputes, treasury, settlement health, revenue, audit (operator/index.ts). */
    operator,

    /** Starts following the registry (and indexing it). Resolves after the first sync. */
    async start() {
      mirrorStarted ??= (async () => {
        await mirror.start();
        await mirror.ready();
        attachment = attachToCatalog(searchIndex, mirror, { onError: (err) => log('search indexing failed', err) });
        await attachment.ready;
      })();
      await mirrorStarted;
      if (network.friendbotUrl) provisioning.ensure(treasuryAddress).catch((err) => log('treasury provisioning failed (will retry on use)', err));
      provisioning.start();
      void reconcileTopups();
      settlement.start();
      operator.start();
      walletPath?.reconcile().catch((err) => log('wallet payment reconciliation failed', err));
    },

    async authenticateBearer(token: string): Promise<Principal | undefined> {
      return (await accounts.fromApiKey(token)) ?? oauth.authenticate(token);
    },

    /** The OAuth authorization server (routes in apps/gateway), and the /v1 access rule for OAuth tokens. */
    oauth,
    checkOAuthAccess,

    account: {
      async me(user: User) {
        return {
          id: user.id,
          email: user.email,
          custodial_wallet: user.walletAddress,
          is_publisher: user.isPublisher,
          publisher_name: user.publisherName,
          created_at: user.createdAt.toISOString(),
          ...(await balanceOf(user)),
        };
      },
      balance: balanceOf,
      async wallet(user: User) {
        const w = await walletBalance(user);
        if (w.status === 'provisioning') provisioning.kick();
        return {
          pubkey: user.walletAddress,
          asset: 'USDC',
          asset_issuer: network.usdc.issuer,
          base_units: toJsonInteger(w.units),
          lamports: toJsonInteger(w.units),
          asset_amount: toUsd(w.units),
          sol: toUsd(w.units),
          status: w.status,
          explorer_url: network.explorer.account(user.walletAddress),
          master_wallet: treasuryAddress,
        };
      },
      /**
       * `POST /v1/topup`: paid on chain from the account's wallet (or free where
       * `FAREBOX_FREE_TOPUPS` allows it); the new balance and the top-up.
       */
      async topup(user: User, body: unknown, idempotencyKey?: string) {
        const { amount } = parse(TopupSchema, body);
        // `amount` is a JSON number (the spec's type): "5" is refused like any other bad amount.
        if (typeof amount !== 'number') throw new GatewayError('BAD_REQUEST', 'invalid amount (must be 0 < n <= 1000)');
        const units = await translated(async () => parseTopupAmount(amount));
        return topups.topup(user, units, idempotencyKey, async (topup) => ({ ...(await balanceOf(user)), topup }));
      },
      async transactions(user: User, limit: unknown) {
        const n = intParam(limit, 'limit', 1, 500, 50);
        return (await translated(() => ledger.transactions(user.id, n))).map(transactionView);
      },
    },

    catalog: {
      async list(q?: string) {
        const stats = await serviceStatsByName();
        const view = (a: RegistryAgent) => serviceView(a, stats.get(`${a.owner}\u0000${a.service}`));
        if (q === undefined || q.trim() === '') return mirror.list().sort((a, b) => b.createdAt - a.createdAt || a.service.localeCompare(b.service)).map(view);
        if (q.length > 512) throw new GatewayError('BAD_REQUEST', 'query too long (max 512)');
        const hits = await searchIndex.search(q, { limit: 50 });
        return hits.flatMap((h) => {
          const agent = mirror.get(h.id);
          return agent ? [{ ...view(agent), score: Math.round(h.score * 1e4) / 1e4 }] : [];
        });
      },
      /** `GET /v1/agents/:service/manifest`: what the service says about its price (its pricing note), checked against the registry. */
      async manifest(name: string) {
        const agent = mirror.get(name) ?? (await registry.getAgent(name).catch(() => null));
        if (!agent) throw new GatewayError('NOT_FOUND', 'service not found');
        return manifests.get({ service: agent.service, owner: agent.owner, endpoint: agent.endpoint });
      },
      async mine(user: User) {
        const { rows } = await db.query<{ service: string }>('SELECT service FROM gw_services WHERE user_id = $1 AND removed_at IS NULL ORDER BY created_at DESC', [user.id]);
        const stats = await serviceStatsByName();
        const out = [];
        for (const { service } of rows) {
          const agent = mirror.get(service) ?? (await registry.getAgent(service).catch(() => null));
          if (agent && agent.owner === user.walletAddress) out.push(serviceView(agent, stats.get(`${agent.owner}\u0000${agent.service}`)));
        }
        return out;
      },
      async register(user: User, body: unknown) {
        requirePublisher(user);
        const input = parse(RegisterSchema, body);
        await checkEndpoint(input.endpoint, policy);
        await translated(() => provisioning.ensure(user.walletAddress, user.id));
        const { txHash } = await translated(() =>
          registry.register(walletSigner(wallets, user.walletAddress), {
            service: input.service,
            pricePerCall: BigInt(input.pricePerCallLamports),
            endpoint: input.endpoint,
            description: input.description,
          }),
        );
        await db.query(
          `INSERT INTO gw_services (service, user_id, owner_wallet, tx_hash) VALUES ($1, $2, $3, $4)
           ON CONFLICT (service) DO UPDATE SET user_id = EXCLUDED.user_id, owner_wallet = EXCLUDED.owner_wallet, tx_hash = EXCLUDED.tx_hash, created_at = now(), removed_at = NULL`,
          [input.service, user.id, user.walletAddress, txHash],
        );
        // Searchable on this gateway as soon as the answer returns; the chain event confirms it again later.
        const agent = await confirmed(input.service);
        if (!agent) throw new GatewayError('UPSTREAM', 'registration not visible on chain yet');
        return { ...serviceView(agent), txHash, explorerUrl: network.explorer.tx(txHash) };
      },
      async update(user: User, service: string, body: unknown) {
        requirePublisher(user);
        const input = parse(UpdateSchema, body);
        if (input.pricePerCallLamports === undefined && input.endpoint === undefined && input.description === undefined) {
          throw new GatewayError('BAD_REQUEST', 'nothing to update (pricePerCallLamports, endpoint or description)');
        }
        await ownedAgent(user, service);
        if (input.endpoint !== undefined) await checkEndpoint(input.endpoint, policy);
        const { txHash } = await translated(() =>
          registry.update(walletSigner(wallets, user.walletAddress), service, {
            ...(input.pricePerCallLamports !== undefined ? { pricePerCall: BigInt(input.pricePerCallLamports) } : {}),
            ...(input.endpoint !== undefined ? { endpoint: input.endpoint } : {}),
            ...(input.description !== undefined ? { description: input.description } : {}),
          }),
        );
        const agent = await confirmed(service);
        if (!agent) throw new GatewayError('NOT_FOUND', 'service not found');
        return { ...serviceView(agent), txHash, explorerUrl: network.explorer.tx(txHash) };
      },
      async remove(user: User, service: string) {
        requirePublisher(user);
        await ownedAgent(user, service);
        const { txHash } = await translated(() => registry.deregister(walletSigner(wallets, user.walletAddress), service));
        await db.query('UPDATE gw_services SET removed_at = now() WHERE service = $1 AND user_id = $2', [service, user.id]);
        await confirmed(service).catch(() => undefined);
        return { service, removed: true, txHash, explorerUrl: network.explorer.tx(txHash) };
      },
    },

    calls: spending.wrapCalls(calls),

    oauthConnections: oauth.connections,

    publisher: {
      async activate(user: User, body: unknown) {
        const updated = await accounts.activatePublisher(user.id, body);
        return { is_publisher: true, publisher_name: updated.publisherName, payout_wallet: updated.walletAddress, wallet_status: (await walletBalance(updated)).status };
      },
      async overview(user: User) {
        requirePublisher(user);
        const totals = await ledger.publisherTotals(user.walletAddress);
        const services = await core.catalog.mine(user);
        const w = await walletBalance(user);
        return {
          publisher_name: user.publisherName,
          payout_wallet: user.walletAddress,
          wallet_status: w.status,
          fee: { pct: PLATFORM_FEE_PCT },
          calls: totals.calls,
          ...amountFields('earned', totals.earned),
          ...amountFields('pending', totals.pending),
          ...amountFields('settled', totals.settled),
          ...amountFields('gross', totals.gross),
          ...amountFields('fee', totals.fee),
          services,
          ...amountFields('wallet', w.units),
        };
      },
      async settlements(user: User, limit: unknown) {
        requirePublisher(user);
        return settlement.list(user.walletAddress, intParam(limit, 'limit', 1, 200, 50));
      },
      async analytics(user: User, days: unknown) {
        requirePublisher(user);
        const n = intParam(days, 'days', 1, 90, 30);
        const points = await ledger.publisherAnalytics(user.walletAddress, n);
        return points.map((p) => ({ day: p.day, calls: p.calls, earned_base_units: toJsonInteger(p.earned), earned_lamports: toJsonInteger(p.earned), earned_asset: toUsd(p.earned), earned_sol: toJsonInteger(p.earned), earned_usd: toUsd(p.earned) }));
      },
      async settle(user: User) {
        requirePublisher(user);
        return settlement.settle(user.walletAddress);
      },
    },

    platform: {
      async stats() {
        const s = await ledger.platformStats();
        return {
          services: mirror.list().length,
          accounts: s.accounts,
          calls: s.calls,
          ...amountFields('volume', s.gross),
          ...amountFields('revenue', s.fees),
          ...amountFields('publisher_earnings', s.net),
          ...amountFields('credits_outstanding', s.credits),
          ...amountFields('held', s.held),
          fee: { pct: PLATFORM_FEE_PCT },
        };
      },
      key() {
        return {
          publicKey: certificateSigner.publicKey,
          network: network.name,
          x402Network: network.x402Network,
          passphrase: network.passphrase,
          rpcUrl: network.rpcUrl,
          horizonUrl: network.horizonUrl,
          friendbotUrl: network.friendbotUrl ?? null,
          registryContractId: network.registryContractId ?? null,
          usdc: network.usdc,
          explorerUrl: network.explorer.tx('').replace(/\/tx\/$/, ''),
          treasury: treasuryAddress,
          feePct: PLATFORM_FEE_PCT,
          topups: topups.mode,
        };
      },
      /**
       * `GET /health/ready`: whether this gateway can serve traffic. Each
       * dependency is asked (database, Redis when configured, the network's
       * RPC, the catalog mirror); any that is not usable makes it not ready,
       * with the reason.
       */
      async ready(): Promise<{ ready: boolean; reasons: string[]; checks: Record<string, string> }> {
        const checks: Record<string, string> = {};
        const reasons: string[] = [];
        const check = async (name: string, fn: () => Promise<string>) => {
          try {
            checks[name] = await withTimeout(fn(), 2_000, name);
          } catch (err) {
            checks[name] = 'down';
            reasons.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
          }
        };
        await Promise.all([
          check('database', async () => {
            await db.query('SELECT 1');
            return 'ok';
          }),
          ...(redis
            ? [
                check('redis', async () => {
                  if (redis!.status !== 'ready') throw new Error(`connection ${redis!.status}`);
                  await redis!.ping();
                  return 'ok';
                }),
              ]
            : []),
          check('rpc', async () => `ledger ${await networkLedger()}`),
        ]);
        const m = mirror.status();
        const staleAfterMs = config.catalogStaleMs;
        if (m.lastSyncAt === null) {
          checks.catalog = 'down';
          reasons.push(`catalog: not synced yet${m.lastError ? ` (${m.lastError})` : ''}`);
        } else if (Date.now() - m.lastSyncAt > staleAfterMs) {
          checks.catalog = 'down';
          reasons.push(`catalog: last synced ${Math.round((Date.now() - m.lastSyncAt) / 1000)} s ago${m.lastError ? ` (${m.lastError})` : ''}`);
        } else {
          checks.catalog = m.syncedLedger === null ? 'ok' : `ledger ${m.syncedLedger}`;
        }
        return { ready: reasons.length === 0, reasons, checks };
      },
      async health() {
        let database = true;
        try {
          await db.query('SELECT 1');
        } catch {
          database = false;
        }
        return {
          ok: database,
          service: 'farebox-gateway',
          network: network.name,
          database: database ? db.kind : 'unavailable',
          search: searchIndex.status(),
          catalog: { services: mirror.list().length },
          rate_limits: rateLimits instanceof RedisRateLimitStore ? (rateLimits.healthy ? 'redis' : 'redis-unavailable') : 'memory',
          uptime_s: Math.round((Date.now() - startedAt) / 1000),
        };
      },
    },

    async close() {
      clearInterval(reaper);
      clearInterval(topupReconciler);
      await provisioning.stop();
      await settlement.stop();
      await operator.stop();
      attachment?.detach();
      await mirror.stop().catch(() => undefined);
      await calls.close();
      await manifests.close();
      accounts.close();
      redis?.disconnect();
      if (!options.database) await db.close();
    },
  };
  return core;
}

export type GatewayCore = Awaited<ReturnType<typeof createGateway>>;
export { toGatewayError };
