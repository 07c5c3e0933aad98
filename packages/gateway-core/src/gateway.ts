import { attachToCatalog } from '@farebox/discovery';
import { walletSigner } from '@farebox/wallets';
import { createAccounts } from './auth/accounts.js';
import { systemClock } from './clock.js';
import { resolveGatewayConfig } from './config.js';
import { CredentialCache } from './auth/credential-cache.js';
import { RedisInvalidationBus } from './auth/redis-invalidation.js';
import { safeEqual } from './auth/tokens.js';
import type { CreateGatewayOptions, GatewayCore } from './gateway-types.js';
import { toGatewayError } from './ledger-errors.js';
import { createManifests } from './manifests.js';
import { createServiceHealth } from './health/index.js';
import { checkAccess } from './oauth/scopes.js';
import { createOAuth } from './oauth/server.js';
import { createSpendingLimits } from './oauth/spending.js';
import { createWebhooks } from './webhooks/index.js';
import { budgetOfView, createCallConfirmations, withThresholds } from './oauth/confirmations.js';
import { createDependencyTracker } from './observability/dependencies.js';
import { createLogger, legacySink } from './observability/log.js';
import { createMetrics } from './observability/metrics.js';
import { createOperator, type Operator } from './operator/index.js';
import { openInfrastructure } from './runtime/infrastructure.js';
import { GATEWAY_MIGRATIONS_DIR } from './migrations-dir.js';
import { latestLedgerReader, observeGateway, startBackgroundJobs } from './runtime/jobs.js';
import { startLiveness } from './runtime/liveness.js';
import { createWalletCreditAudit } from './wallet-audit.js';
import { createPayments } from './runtime/payments.js';
import { createAccountService, createWalletReader } from './services/account.js';
import { createBazaarService } from './services/bazaar.js';
import { createCatalogService } from './services/catalog.js';
import { createPlatformService } from './services/platform.js';
import { createPublisherService } from './services/publisher.js';
import { createPublisherLinks } from './services/publisher-links.js';
import { createSettlement } from './settlement/index.js';
import { createWalletProvisioning } from './wallet-provisioning.js';
import { createChannelPool } from './x402/channels.js';
import { createX402Runtime } from './x402/index.js';
import { createMpp } from './mpp/index.js';

export type { CallOptions, CallService, CreateGatewayOptions, GatewayCore } from './gateway-types.js';

/** How often the dependencies are asked when no traffic does (readiness, once started). */
const DEPENDENCY_WATCH_MS = 5_000;
export { GATEWAY_MIGRATIONS_DIR, toGatewayError };

/**
 * The composition root: builds the gateway's parts (database and ledger,
 * wallets and platform keys, settlement network, catalog and search, OAuth,
 * settlement, operators) and the four services the HTTP host exposes
 * (account, catalog, publisher, platform).
 */
export async function createGateway(options: CreateGatewayOptions = {}): Promise<GatewayCore> {
  // Typed settings only: the host reads its environment (apps/gateway/src/config.ts, configFromEnv).
  const config = options.config ?? resolveGatewayConfig({ ...options, ...(options.wallets ? { keystoreKeyProvided: true } : {}) });
  // One clock for everything the gateway decides by the time (clock.ts).
  const now = options.now ?? systemClock;
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const log = options.log ?? legacySink(logger);
  const metrics = createMetrics();
  for (const warning of config.warnings) logger.warn({ event: 'config' }, warning);
  // What the clients say of their servers: one log line and metric move per change (docs/operations.md).
  const dependencies = createDependencyTracker({ logger, metrics, now });
  const infra = await openInfrastructure(options, config, log, dependencies, logger);
  const { db, ledger, wallets, treasuryAddress, network, mirror, searchIndex, redis, search } = infra;
  // Joins the gateways on the database before any call: each hold and lease names this gateway (runtime/liveness.ts).
  const liveness = await startLiveness({ ledger, ...config.liveness, sole: db.kind === 'pglite', logger, metrics, log });
  const treasury = walletSigner(wallets, treasuryAddress);
  const oauth = createOAuth({
    db,
    baseUrl: config.baseUrl,
    // Client ID Metadata Documents are fetched under the endpoint policy of service calls.
    policy: infra.policy,
    ...options.oauth,
    now,
    allowedOrigins: [...(options.oauth?.allowedOrigins ?? []), ...config.mcpAllowedOrigins],
    budgets: (of) => ledger.budgets(of),
  });
  // Signed webhooks: endpoints, the delivery worker, the budget threshold event (webhooks/, docs/webhooks.md).
  const webhooks = createWebhooks({
    db,
    secrets: wallets,
    policy: infra.policy,
    rateLimits: infra.rateLimits,
    now,
    sole: db.kind === 'pglite',
    log,
    ...(options.crashPoint ? { crashPoint: options.crashPoint } : {}),
  });
  infra.webhookWake.emitted = () => webhooks.worker.kick();
  const spending = createSpendingLimits({ ledger, now, onBudgetUse: (use) => webhooks.budgetUsed(use) });

  let noteSettlementFailure: Operator['noteSettlementFailure'] | undefined;
  const settlementLog = (m: string, e?: unknown) => {
    noteSettlementFailure?.(m, e);
    metrics.settlementFailures.inc();
    metrics.settlementLastFailure.set(now() / 1000);
    logger.warn({ event: 'settlement', err: e }, m);
  };
  const crashPoint = options.crashPoint;
  // Every treasury-sourced transaction goes through this one queue (runtime/treasury-queue.ts).
  const { treasuryQueue } = infra;
  const settlement = createSettlement({
    ledger,
    db,
    network,
    treasury,
    treasuryQueue,
    settings: config.settlement,
    log: settlementLog,
    ...(crashPoint ? { crashPoint } : {}),
    now,
    onStep: (st) => logger.info({ event: 'settlement', ...st }, `settlement cycle ${st.cycleId}: ${st.from} -> ${st.to}`),
    dependencies,
  });
  const walletAudit = createWalletCreditAudit({ ledger, db, network, treasuryAddress });
  const operator = createOperator({ db, ledger, network, settlement, treasury, treasuryQueue, walletAudit, settings: config.operators, log, now });
  noteSettlementFailure = (m, e) => operator.noteSettlementFailure(m, e);
  // Each service's health, counted from the calls that reach it (health/index.ts).
  const health = createServiceHealth({ db, now, log, ownerOf: (service) => mirror.get(service)?.owner });
  // Paid calls an OAuth connection's owner confirms, on every door that pays (oauth/confirmations.ts).
  const callConfirmations = createCallConfirmations({
    db,
    now,
    origin: config.baseUrl,
    price: async (name) => (mirror.get(name) ?? (await infra.registry.getAgent(name).catch(() => null)))?.pricePerCall,
    budget: async (principal) => budgetOfView(await spending.view(principal)),
  });
  const { calls, topups, walletPath } = createPayments({
    infra,
    config,
    settlement,
    spending,
    logger,
    metrics,
    log,
    crashPoint,
    now,
    gate: (principal, service, approvalId) => callConfirmations.gate(principal, service, approvalId),
    onCall: (c) => health.note(c),
  });
  const mpp = createMpp({ config, network, ledger, db, treasury, treasuryQueue, calls, now, log });
  const manifests = createManifests({ policy: infra.policy, now });

  // A new account's wallet is set up by a durable job that starts at sign-up.
  const provisioning = createWalletProvisioning({
    db,
    chain: infra.chain,
    network,
    wallets,
    treasury,
    treasuryQueue,
    startingXlm: 20_000_000n,
    log,
    ...(options.now ? { now: options.now } : {}),
  });
  const accounts = createAccounts({
    db,
    wallets,
    onSignup: () => provisioning.kick(),
    cache: new CredentialCache({ ...(redis ? { bus: new RedisInvalidationBus(redis) } : {}), ttlMs: config.credentialCacheMs, now }),
    credits: { openAccount: async (id) => void (await ledger.openAccount(id)) },
    now,
    budgets: (of) => ledger.budgets(of),
  });

  const wallet = createWalletReader({ ledger, balances: (a) => infra.chain.balances(a) });
  const account = createAccountService({ ledger, network, treasuryAddress, topups, provisioning, wallet });
  const catalog = createCatalogService({
    ...infra,
    attachment: () => search.attachment,
    manifests,
    provisioning,
    health,
    mppChannels: config.mpp.enabled,
    now,
  });
  const links = createPublisherLinks({ db: infra.db, now });
  const publisher = createPublisherService({ ledger, accounts, wallet, mine: (u) => catalog.mine(u), ownedBy: (o) => catalog.ownedBy(o), links, settlement });
  const networkLedger = latestLedgerReader(infra, now);
  const platform = createPlatformService({
    ...infra,
    platformPublicKey: infra.certificateSigner.publicKey,
    topupMode: topups.mode,
    catalogStaleMs: config.catalogStaleMs,
    readyRequires: config.readyRequires,
    modelConfigured: Boolean(config.modelDir || config.allowModelDownload),
    networkLedger,
    now,
  });
  observeGateway(metrics, infra, networkLedger, now);
  // Settlements of the x402 facilitator whose record was interrupted are recorded from the chain (x402/reconcile.ts).
  // Its settlements are sent from channel accounts, never from the treasury (x402/channels.ts).
  const channels = await createChannelPool({
    db,
    wallets,
    chain: infra.chain,
    network,
    treasury,
    treasuryQueue,
    count: config.x402.channels,
    balanceStroops: config.x402.channelStroops,
    perPayer: config.x402.payerConcurrency,
    log,
    now,
  });
  const x402 = createX402Runtime({
    ...{ ledger, network, channels, logger, metrics, log, crashPoint, now },
    ...{ treasury, treasuryQueue, settings: config.x402, rateLimits: infra.rateLimits },
  });
  const jobs = startBackgroundJobs({ infra, topups, audit: walletAudit, holdTimeoutMs: config.holdTimeoutMs, logger, metrics, log });
  let mirrorStarted: Promise<void> | undefined;
  let stopWatch: (() => void) | undefined;

  return {
    config,
    network,
    ledger,
    db,
    registry: infra.registry,
    mirror,
    searchIndex,
    wallets,
    treasuryAddress,
    platformPublicKey: infra.certificateSigner.publicKey,
    rateLimits: infra.rateLimits,
    accounts,
    safeEqual,
    settlement,
    logger,
    metrics,
    operator,
    auditWalletCredits: () => jobs.auditWalletCredits(),
    reapExpiredHolds: () => jobs.reapExpiredHolds(),
    oauth,
    checkAccess,
    async authenticateBearer(token) {
      return (await accounts.fromApiKey(token)) ?? oauth.authenticate(token);
    },
    account,
    catalog,
    serviceHealth: health,
    bazaar: createBazaarService({ ...infra, manifests, now, health: (service) => health.of(service), mppChannels: config.mpp.enabled }),
    calls,
    spendingPolicy: (principal) => spending.view(principal),
    oauthConnections: withThresholds(oauth.connections, callConfirmations),
    callConfirmations,
    publisher,
    platform,
    webhooks,
    x402,
    mpp,

    async start() {
      mirrorStarted ??= (async () => {
        await mirror.start();
        await mirror.ready();
        if (infra.searchBackend.kind === 'local') {
          search.attachment = attachToCatalog(searchIndex, mirror, { onError: (err) => log('search indexing failed', err) });
          await search.attachment.ready;
        }
      })();
      await mirrorStarted;
      if (network.friendbotUrl) provisioning.ensure(treasuryAddress).catch((err) => log('treasury provisioning failed (will retry on use)', err));
      provisioning.start();
      health.start();
      // Dependencies are asked every 5 s, so a change is logged even without traffic.
      stopWatch ??= platform.watch(DEPENDENCY_WATCH_MS);
      // Holds a crash left behind past their timeout go back at once, not at the reaper's first tick.
      void jobs.reapExpiredHolds().catch((err) => log('reaper failed', err));
      jobs.reconcileTopups();
      void jobs.auditWalletCredits();
      settlement.start();
      operator.start();
      walletPath?.reconcile().catch((err) => log('wallet payment reconciliation failed', err));
      x402.reconciler.start();
      x402.refunds.start();
      mpp.start();
      await webhooks.worker.start();
      if (config.x402.enabled && network.x402Network !== 'stellar:local')
        channels.prepare().catch((err) => log('x402 channel accounts are not set up yet (will retry on use)', err));
    },

    async close() {
      stopWatch?.();
      dependencies.stop();
      jobs.stop();
      x402.reconciler.stop();
      x402.refunds.stop();
      mpp.stop();
      await webhooks.worker.stop();
      await channels.close();
      await provisioning.stop();
      await settlement.stop();
      await operator.stop();
      search.attachment?.detach();
      await mirror.stop().catch(() => undefined);
      await calls.close();
      // What this gateway counted is written before the database closes.
      await health.close();
      await liveness.stop();
      await infra.certificateSigner.close();
      await manifests.close();
      accounts.close();
      redis?.disconnect();
      if (!options.database) await db.close();
    },
  };
}
