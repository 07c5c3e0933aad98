import { createServer, type Server } from 'node:http';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ConfigError, readSettings } from '@farebox/protocol';
import { resolveNetwork, type NetworkName } from '@farebox/stellar';
import type { SearchIndex } from '@farebox/discovery';
import { createDiscoveryHandler, type DiscoveryHttpOptions } from './http.js';
import { createHealthFeed, type HealthFeed } from './health-feed.js';
import { DISCOVERY_SETTINGS } from './settings.js';
import { createDiscoveryService, type DiscoveryService, type DiscoveryServiceOptions } from './service.js';

export interface DiscoveryConfig {
  port: number;
  host: string;
  dataDir: string;
  network: NetworkName;
  devnetUrl?: string;
  rpcUrl?: string;
  contractId?: string;
  modelDir?: string;
  allowModelDownload: boolean;
  /** Where the model is downloaded from (`FAREBOX_MODEL_HUB_URL`). */
  modelHubUrl?: string;
  vectorIndex: 'hnsw' | 'flat';
  pollIntervalMs: number;
  snapshotIntervalMs: number;
  rateLimitPerMinute: number;
  trustProxy: boolean;
  /** The platform treasury's G... address (`FAREBOX_TREASURY_ADDRESS`): `payTo` of the bazaar listing's `exact` offers. */
  treasury?: string;
  /** The gateway's health feed, `<gateway>/discovery/health` (`FAREBOX_HEALTH_FEED_URL`): each service's health, shown and weighing search. */
  healthFeedUrl?: string;
  /** How often the feed is read, ms (`FAREBOX_HEALTH_FEED_MS`, default 30 000). */
  healthFeedIntervalMs: number;
}

/**
 * The discovery host's settings from its environment (`DISCOVERY_SETTINGS`,
 * docs/configuration.md), typed and validated; every problem at once. The
 * host's one configuration reader: `main.ts` hands it `process.env`, nothing
 * else in the host reads the environment.
 */
export function loadDiscoveryConfig(env: Record<string, string | undefined>): DiscoveryConfig {
  const problems: string[] = [];
  // The gateway's rule: STELLAR_NETWORK (default testnet); FAREBOX_NETWORK is an older alias that may not disagree.
  if (env.STELLAR_NETWORK && env.FAREBOX_NETWORK && env.STELLAR_NETWORK !== env.FAREBOX_NETWORK) {
    problems.push(`STELLAR_NETWORK (${env.STELLAR_NETWORK}) and FAREBOX_NETWORK (${env.FAREBOX_NETWORK}) disagree: set STELLAR_NETWORK only`);
  }
  const { values: v, problems: malformed } = readSettings(env, DISCOVERY_SETTINGS);
  problems.push(...malformed);
  const network: NetworkName = v.STELLAR_NETWORK ?? v.FAREBOX_NETWORK ?? 'testnet';
  const config: DiscoveryConfig = {
    port: v.PORT,
    host: v.FAREBOX_DISCOVERY_HOST,
    dataDir: resolve(v.FAREBOX_DISCOVERY_DATA_DIR ?? join(v.FAREBOX_DATA_DIR ?? './.farebox', 'discovery')),
    network,
    ...(v.FAREBOX_DEVNET_URL ? { devnetUrl: v.FAREBOX_DEVNET_URL.replace(/\/+$/, '') } : {}),
    ...(v.STELLAR_RPC_URL ? { rpcUrl: v.STELLAR_RPC_URL } : {}),
    ...(v.STELLAR_CONTRACT_ID ? { contractId: v.STELLAR_CONTRACT_ID } : {}),
    ...(v.FAREBOX_MODEL_DIR ? { modelDir: v.FAREBOX_MODEL_DIR } : {}),
    allowModelDownload: v.FAREBOX_ALLOW_MODEL_DOWNLOAD ?? false,
    ...(v.FAREBOX_MODEL_HUB_URL ? { modelHubUrl: v.FAREBOX_MODEL_HUB_URL } : {}),
    vectorIndex: v.FAREBOX_DISCOVERY_VECTOR_INDEX,
    pollIntervalMs: v.FAREBOX_DISCOVERY_POLL_MS,
    snapshotIntervalMs: v.FAREBOX_DISCOVERY_SNAPSHOT_MS,
    rateLimitPerMinute: v.FAREBOX_DISCOVERY_RATE_LIMIT,
    trustProxy: v.FAREBOX_TRUST_PROXY,
    ...(v.FAREBOX_TREASURY_ADDRESS ? { treasury: v.FAREBOX_TREASURY_ADDRESS } : {}),
    ...(v.FAREBOX_HEALTH_FEED_URL ? { healthFeedUrl: v.FAREBOX_HEALTH_FEED_URL } : {}),
    healthFeedIntervalMs: v.FAREBOX_HEALTH_FEED_MS,
  };
  if (network === 'local' && !config.devnetUrl)
    problems.push('FAREBOX_DEVNET_URL required on the local network (the devnet to follow, e.g. http://127.0.0.1:8787/devnet)');
  if (problems.length) throw new ConfigError(problems);
  return config;
}

export interface StartDiscoveryOptions extends Partial<DiscoveryConfig>, DiscoveryHttpOptions {
  /** The environment to read the settings from (`loadDiscoveryConfig`); an option wins over its variable. None when omitted (`farebox-discovery` passes `process.env`). */
  env?: Record<string, string | undefined>;
  searchIndex?: SearchIndex;
  log?: DiscoveryServiceOptions['log'];
  /** Resolve once listening, without waiting for the first sync (default: wait). */
  waitReady?: boolean;
}

export interface RunningDiscovery {
  /** The gateway's health feed, when configured (`refresh()` reads it now). */
  health?: HealthFeed;
  url: string;
  service: DiscoveryService;
  server: Server;
  close(): Promise<void>;
}

/**
 * Starts a discovery instance: listens at once (`/health` answers 503 until
 * the snapshot is loaded and the first sync is indexed), then follows the registry.
 */
export async function startDiscovery(options: StartDiscoveryOptions = {}): Promise<RunningDiscovery> {
  const env = options.env ?? {};
  const config = { ...loadDiscoveryConfig({ ...(options.devnetUrl ? { FAREBOX_DEVNET_URL: options.devnetUrl } : {}), ...env }), ...stripUndefined(options) };
  const network = resolveNetwork({
    network: config.network,
    ...(config.devnetUrl ? { devnetUrl: config.devnetUrl } : {}),
    ...(config.rpcUrl ? { rpcUrl: config.rpcUrl } : {}),
    ...(config.contractId ? { contractId: config.contractId } : {}),
    env: {},
  });
  const service = createDiscoveryService({
    network,
    dataDir: config.dataDir,
    modelDir: config.modelDir ?? join(homedir(), '.cache', 'farebox', 'models'),
    allowModelDownload: config.allowModelDownload,
    ...(config.modelHubUrl ? { modelHubUrl: config.modelHubUrl } : {}),
    vectorIndex: config.vectorIndex,
    pollIntervalMs: config.pollIntervalMs,
    snapshotIntervalMs: config.snapshotIntervalMs,
    ...(options.searchIndex ? { searchIndex: options.searchIndex } : {}),
    ...(options.log ? { log: options.log } : {}),
  });
  const health = config.healthFeedUrl
    ? createHealthFeed({ url: config.healthFeedUrl, intervalMs: config.healthFeedIntervalMs, ...(options.log ? { log: options.log } : {}) })
    : undefined;
  health?.start();
  const handler = createDiscoveryHandler(service, {
    ...(health ? { health } : {}),
    rateLimitPerMinute: config.rateLimitPerMinute,
    trustProxy: config.trustProxy,
    ...(config.treasury ? { treasury: config.treasury } : {}),
    ...(options.now ? { now: options.now } : {}),
  });
  const server = createServer(handler);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(config.port, config.host, () => ok());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  const started = service.start();
  started.catch((err) => (options.log ?? console.error)('discovery start failed', err));
  if (options.waitReady !== false) await started;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    service,
    server,
    ...(health ? { health } : {}),
    async close() {
      health?.stop();
      await new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      });
      await service.stop();
    },
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  const keep = [
    'port',
    'host',
    'dataDir',
    'network',
    'devnetUrl',
    'rpcUrl',
    'contractId',
    'modelDir',
    'allowModelDownload',
    'modelHubUrl',
    'vectorIndex',
    'pollIntervalMs',
    'snapshotIntervalMs',
    'rateLimitPerMinute',
    'trustProxy',
    'treasury',
    'healthFeedUrl',
    'healthFeedIntervalMs',
  ];
  return Object.fromEntries(Object.entries(o).filter(([k, v]) => v !== undefined && keep.includes(k))) as Partial<T>;
}
