import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createEmbedder, createSearchIndex, DEFAULT_MODEL_ID, type CatalogAttachment, type SearchIndex } from '@farebox/discovery';
import { Ledger, migrate, migrateLedger, openDatabase, type Database } from '@farebox/ledger';
import type { Ed25519Signer } from '@farebox/protocol';
import {
  createAccounts as createStellarAccounts,
  createCatalogMirror,
  createRegistryClient,
  FileCursorStore,
  type Accounts as StellarAccounts,
  type CatalogMirror,
  type NetworkConfig,
  type RegistryAgent,
  type RegistryClient,
} from '@farebox/stellar';
import { createLocalKeystore, type LocalKeystore } from '@farebox/wallets';
import { Redis } from 'ioredis';
import type { GatewayConfig } from '../config.js';
import { trackDatabase } from '../db-errors.js';
import type { CreateGatewayOptions } from '../gateway-types.js';
import { DbKeystoreStorage } from '../keystore-db.js';
import { GATEWAY_MIGRATIONS_DIR } from '../migrations-dir.js';
import { reasonOf, trackCalls, type DependencyTracker } from '../observability/dependencies.js';
import type { Logger } from '../observability/log.js';
import { downloadProgressLogger, reportSearchModel } from '../search-model.js';
import type { EndpointPolicy } from '../security/endpoint-guard.js';
import { MemoryRateLimitStore, type RateLimitStore } from '../security/rate-limit.js';
import { RedisRateLimitStore } from '../security/redis-rate-limit.js';
import { createTreasuryQueue, type TreasuryQueue } from './treasury-queue.js';
import { webhookLedgerHooks } from '../webhooks/events.js';

/** The gateway's stores and network clients, opened and migrated. */
import { localSearchBackend, remoteSearchBackend, type SearchBackend } from '../search-backend.js';

export interface Infrastructure {
  db: Database;
  ledger: Ledger;
  wallets: LocalKeystore;
  treasuryAddress: string;
  /** The one queue of treasury-sourced transactions (in process and across gateways): runtime/treasury-queue.ts. */
  treasuryQueue: TreasuryQueue;
  /** Called after the ledger wrote a webhook event (top-up, settlement): the gateway sets it to wake its webhook worker. */
  webhookWake: { emitted(): void };
  /** Signs call certificates on a worker thread (one per paid call, off the event loop). */
  certificateSigner: Ed25519Signer & { close(): Promise<void> };
  network: NetworkConfig;
  registry: RegistryClient;
  chain: StellarAccounts;
  redis: Redis | undefined;
  rateLimits: RateLimitStore;
  searchIndex: SearchIndex;
  /** What ranks searches: the in-process index, or the discovery backend at FAREBOX_DISCOVERY_URL. */
  searchBackend: SearchBackend;
  mirror: CatalogMirror;
  /** The search index's link to the mirror (set once the mirror has synced). */
  search: { attachment: CatalogAttachment<RegistryAgent> | undefined };
  /** Where registered endpoints may not point (the gateway itself). */
  policy: EndpointPolicy;
  /** What the clients above report of their servers: up, down (observability/dependencies.ts). */
  dependencies: DependencyTracker;
}

/**
 * Opens the database (PGlite or PostgreSQL) with its migrations, the ledger,
 * the wallets and the platform keys, the settlement network's clients, the
 * shared rate-limit store, the catalog mirror and search. The database,
 * Redis, RPC, Horizon and discovery clients report their servers' state to
 * `dependencies` (one log line and metric move per change).
 */
export async function openInfrastructure(
  options: CreateGatewayOptions,
  config: GatewayConfig,
  log: (message: string, err?: unknown) => void,
  dependencies: DependencyTracker,
  /** Where the search model's download and mode are reported (search-model.ts). */
  logger?: Logger,
): Promise<Infrastructure> {
  // Keys, wallets and the database live here: readable by this user only (docs/production.md).
  await mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  const opened =
    options.database ??
    (await openDatabase({
      url: config.databaseUrl,
      dataDir: join(config.dataDir, 'db'),
      poolSize: config.databasePoolSize,
      ...(config.databaseSchema ? { schema: config.databaseSchema } : {}),
    }));
  await migrateLedger(opened);
  await migrate(opened, GATEWAY_MIGRATIONS_DIR, 'gateway');
  // Every statement says whether the server answered (a connection failure marks the database down).
  const db = trackDatabase(opened, dependencies);
  // Holds' expiry moves with the gateway's clock (a test's; the default moves nothing).
  // Webhook events of top-ups and settlement are written in the ledger's own transactions (webhooks/events.ts).
  const webhookWake: { emitted(): void } = { emitted() {} };
  const hooks = webhookLedgerHooks({ network: config.stellar, ...(options.now ? { now: options.now } : {}), emitted: () => webhookWake.emitted() });
  const ledger = new Ledger(db, { signupCredit: config.signupCredit, ...(options.now ? { now: options.now } : {}), hooks });

  // Secrets live encrypted in the database (shared by every gateway on it); the
  // key comes from the configuration (FAREBOX_KEYSTORE_KEY) or a key file in the data directory.
  const { keystoreKey, platformSecret, treasurySecret } = config.secrets;
  const wallets =
    options.wallets ??
    (await createLocalKeystore({ dir: join(config.dataDir, 'keystore'), storage: new DbKeystoreStorage(db), ...(keystoreKey ? { key: keystoreKey } : {}) }));
  if (platformSecret) await wallets.import('platform:certificate', platformSecret);
  if (treasurySecret) await wallets.import('platform:treasury', treasurySecret);
  await wallets.create('platform:certificate');
  const treasuryAddress = await wallets.create('platform:treasury');
  const certificateSigner = await wallets.ed25519Signer('platform:certificate', { thread: true });

  const network = config.stellar;
  // The registry is read over the network's RPC; accounts and balances over Horizon.
  const registry = trackCalls(createRegistryClient(network), 'rpc', dependencies);
  const chain = trackCalls(createStellarAccounts(network), 'horizon', dependencies);

  // Registered endpoints never reach the gateway itself: its listening port and public origin are refused.
  const publicPort = Number(new URL(config.publicOrigin).port || (config.publicOrigin.startsWith('https:') ? 443 : 80));
  // (The metrics listener, FAREBOX_METRICS_ADDR, answers without a token: its port is the gateway's too.)
  const ownPorts = [config.port, publicPort, ...(config.metricsAddress ? [config.metricsAddress.port] : [])];
  const policy: EndpointPolicy = { allowLoopback: config.allowLoopbackEndpoints, ownPorts: [...new Set(ownPorts)], ownOrigin: config.publicOrigin };

  // Several gateways share rate limits through Redis (FAREBOX_REDIS_URL); one gateway keeps them in memory.
  let redis: Redis | undefined;
  let rateLimits: RateLimitStore = options.rateLimitStore ?? new MemoryRateLimitStore(options.now ? { now: options.now } : {});
  if (!options.rateLimitStore && config.redisUrl) {
    redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: false });
    // The connection's own events say when Redis goes and comes back (one line each, not one per request).
    dependencies.watch('redis');
    redis.on('ready', () => dependencies.up('redis'));
    redis.on('error', (err: unknown) => dependencies.down('redis', reasonOf(err)));
    redis.on('close', () => dependencies.down('redis', 'connection closed'));
    rateLimits = new RedisRateLimitStore(redis, { onError: (err) => dependencies.down('redis', reasonOf(err)), ...(options.now ? { now: options.now } : {}) });
  }

  // With FAREBOX_DISCOVERY_URL a discovery backend ranks (no model loaded here); else the in-process index.
  const discoveryUrl = config.discoveryUrl;
  // A model missing on first start downloads in the background when allowed; the log says how it goes (search-model.ts).
  const embedder =
    options.searchIndex || discoveryUrl
      ? undefined
      : createEmbedder({
          ...(config.modelDir ? { modelDir: config.modelDir } : {}),
          allowRemote: config.allowModelDownload,
          ...(config.modelHubUrl ? { hubUrl: config.modelHubUrl } : {}),
          onProgress: downloadProgressLogger(DEFAULT_MODEL_ID, () => logger),
        });
  const searchIndex = options.searchIndex ?? createSearchIndex(embedder ? { embedder } : {});
  if (embedder && logger) reportSearchModel(embedder, searchIndex, logger);
  const searchBackend = discoveryUrl
    ? remoteSearchBackend(discoveryUrl, {
        onReachable: (up, err) => (up ? dependencies.up('discovery') : dependencies.down('discovery', reasonOf(err))),
        ...(options.now ? { now: options.now } : {}),
      })
    : localSearchBackend(searchIndex);
  if (discoveryUrl) dependencies.watch('discovery');
  const search: Infrastructure['search'] = { attachment: undefined };
  const mirror = createCatalogMirror({
    registry,
    cursorStore: new FileCursorStore(join(config.dataDir, `catalog-${network.name}.json`)),
    onChange: (change) => search.attachment?.handle(change),
    onError: (err) => log('catalog sync failed (will retry)', err),
    // Its last sync is stamped by the gateway's clock (readiness compares the two).
    ...(options.now ? { now: options.now } : {}),
    // Anyone can write any name to the registry contract: one that breaks the name policy is left out (never listed, searched or called).
    onSkip: ({ shown, reason }) => log(`catalog: registry entry "${shown}" skipped: ${reason}`),
  });
  return {
    db,
    ledger,
    wallets,
    treasuryAddress,
    treasuryQueue: createTreasuryQueue(db, options.now ? { now: options.now } : {}),
    webhookWake,
    certificateSigner,
    network,
    registry,
    chain,
    redis,
    rateLimits,
    searchIndex,
    searchBackend,
    mirror,
    search,
    policy,
    dependencies,
  };
}
