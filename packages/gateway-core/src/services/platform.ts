import { amountFields, PLATFORM_FEE_PCT } from '@farebox/protocol';
import type { SearchIndex, SearchStatus } from '@farebox/discovery';
import type { Database, Ledger } from '@farebox/ledger';
import type { CatalogMirror, NetworkConfig } from '@farebox/stellar';
import type { Redis } from 'ioredis';
import { systemClock, type Clock } from '../clock.js';
import type { RateLimitStore } from '../security/rate-limit.js';
import { RedisRateLimitStore } from '../security/redis-rate-limit.js';
import type { TopupMode } from '../topups.js';
import type { AmountFieldsOf } from '../views.js';

/** `GET /v1/platform/stats`. */
import type { RemoteSearchStatus, SearchBackend } from '../search-backend.js';

export type PlatformStats = { services: number; accounts: number; calls: number; fee: { pct: number } } & AmountFieldsOf<'volume'> &
  AmountFieldsOf<'revenue'> &
  AmountFieldsOf<'publisher_earnings'> &
  AmountFieldsOf<'credits_outstanding'> &
  AmountFieldsOf<'held'>;

/** `GET /v1/platform/key`: what a service needs to verify the platform's calls, and the network. */
export interface PlatformKey {
  publicKey: string;
  network: NetworkConfig['name'];
  x402Network: NetworkConfig['x402Network'];
  passphrase: string;
  rpcUrl: string;
  horizonUrl: string;
  friendbotUrl: string | null;
  registryContractId: string | null;
  usdc: NetworkConfig['usdc'];
  explorerUrl: string;
  treasury: string;
  feePct: number;
  topups: TopupMode;
}

/** `GET /health/ready`. */
export interface Readiness {
  ready: boolean;
  reasons: string[];
  checks: Record<string, string>;
}

/** `GET /health`. */
export interface Health {
  ok: boolean;
  service: 'farebox-gateway';
  network: NetworkConfig['name'];
  database: string;
  /** The in-process index's status, or the discovery backend's (`mode: 'remote'`). */
  search: SearchStatus | RemoteSearchStatus;
  catalog: { services: number };
  rate_limits: 'redis' | 'redis-unavailable' | 'memory';
  uptime_s: number;
}

/** What the platform says about itself: totals, its key and network, its health. */
export interface PlatformService {
  stats(): Promise<PlatformStats>;
  key(): PlatformKey;
  /**
   * Whether this gateway can serve traffic. Each dependency is asked
   * (database, Redis when configured, the network's RPC, the catalog mirror);
   * any that is not usable makes it not ready, with the reason.
   */
  ready(): Promise<Readiness>;
  health(): Promise<Health>;
}

export interface PlatformServiceDeps {
  db: Database;
  ledger: Ledger;
  network: NetworkConfig;
  mirror: CatalogMirror;
  searchIndex: SearchIndex;
  searchBackend: SearchBackend;
  rateLimits: RateLimitStore;
  redis: Redis | undefined;
  platformPublicKey: string;
  treasuryAddress: string;
  topupMode: TopupMode;
  catalogStaleMs: number;
  /** The network's latest ledger (cached by the caller). */
  networkLedger(): Promise<number>;
  /** The gateway's clock (default `Date.now`): the catalog's age and the uptime. */
  now?: Clock;
}

/** Rejects when `p` takes longer than `ms`. */
export const withTimeout = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms).unref())]);

export function createPlatformService(d: PlatformServiceDeps): PlatformService {
  const { db, network, mirror, redis } = d;
  const now = d.now ?? systemClock;
  const startedAt = now();
  return {
    async stats() {
      const s = await d.ledger.platformStats();
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
        publicKey: d.platformPublicKey,
        network: network.name,
        x402Network: network.x402Network,
        passphrase: network.passphrase,
        rpcUrl: network.rpcUrl,
        horizonUrl: network.horizonUrl,
        friendbotUrl: network.friendbotUrl ?? null,
        registryContractId: network.registryContractId ?? null,
        usdc: network.usdc,
        explorerUrl: network.explorer.tx('').replace(/\/tx\/$/, ''),
        treasury: d.treasuryAddress,
        feePct: PLATFORM_FEE_PCT,
        topups: d.topupMode,
      };
    },
    async ready() {
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
                if (redis.status !== 'ready') throw new Error(`connection ${redis.status}`);
                await redis.ping();
                return 'ok';
              }),
            ]
          : []),
        check('rpc', async () => `ledger ${await d.networkLedger()}`),
      ]);
      const m = mirror.status();
      if (m.lastSyncAt === null) {
        checks.catalog = 'down';
        reasons.push(`catalog: not synced yet${m.lastError ? ` (${m.lastError})` : ''}`);
      } else if (now() - m.lastSyncAt > d.catalogStaleMs) {
        checks.catalog = 'down';
        reasons.push(`catalog: last synced ${Math.round((now() - m.lastSyncAt) / 1000)} s ago${m.lastError ? ` (${m.lastError})` : ''}`);
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
      const rateLimits = d.rateLimits;
      return {
        ok: database,
        service: 'farebox-gateway',
        network: network.name,
        database: database ? db.kind : 'unavailable',
        search: d.searchBackend.status(),
        catalog: { services: mirror.list().length },
        rate_limits: rateLimits instanceof RedisRateLimitStore ? (rateLimits.healthy ? 'redis' : 'redis-unavailable') : 'memory',
        uptime_s: Math.round((now() - startedAt) / 1000),
      };
    },
  };
}
