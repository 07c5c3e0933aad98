import { amountFields, PLATFORM_FEE_PCT } from '@farebox/protocol';
import type { SearchIndex, SearchStatus } from '@farebox/discovery';
import type { Database, Ledger } from '@farebox/ledger';
import type { Accounts as StellarAccounts, CatalogMirror, NetworkConfig } from '@farebox/stellar';
import type { Redis } from 'ioredis';
import { systemClock, type Clock } from '../clock.js';
import type { RateLimitStore } from '../security/rate-limit.js';
import { RedisRateLimitStore } from '../security/redis-rate-limit.js';
import type { TopupMode } from '../topups.js';
import type { AmountFieldsOf } from '../views.js';
import type { DependencyName, DependencyState, DependencyTracker } from '../observability/dependencies.js';
import { readiness } from './readiness.js';

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

/** One dependency in `GET /health/ready`. */
export interface DependencyReport {
  /** `up`, `down`, or `unknown` (not used or asked yet). */
  state: DependencyState;
  /** Whether its being down makes this gateway not ready (503). */
  required: boolean;
  /** When the state last changed (ISO), null while unknown. */
  since: string | null;
  /** Why it is down. */
  reason?: string;
  /** What callers notice while it is down. */
  effect?: string;
}

/** `GET /health/ready`. */
export interface Readiness {
  /** False (503) only when a required dependency is down. */
  ready: boolean;
  /** `ok`: every dependency up; `degraded`: serving, some optional dependency down (see `dependencies`); `down`: not ready. */
  status: 'ok' | 'degraded' | 'down';
  /** Why it is not ready: one line per required dependency that is down (empty when ready). */
  reasons: string[];
  /** One word per dependency (`ok`, `down`, `ledger N`), as before `dependencies`. */
  checks: Record<string, string>;
  dependencies: Partial<Record<DependencyName, DependencyReport>>;
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
   * Whether this gateway can answer calls correctly. Each dependency is asked
   * (database, Redis when configured, the network's RPC and Horizon, the
   * catalog mirror, the discovery backend or the model); only a required one
   * that is down makes it not ready: the database, the catalog until its
   * first sync, and those named in `readyRequires` (`FAREBOX_READY_REQUIRES`).
   * The others down make it `degraded`, each with its effect.
   */
  ready(): Promise<Readiness>;
  /** Asks {@link ready} every `intervalMs` so a dependency's change is logged without traffic; returns the stop. */
  watch(intervalMs: number): () => void;
  health(): Promise<Health>;
}

export interface PlatformServiceDeps {
  db: Database;
  ledger: Ledger;
  network: NetworkConfig;
  mirror: CatalogMirror;
  /** Horizon's client (readiness reads the treasury's balances). */
  chain: Pick<StellarAccounts, 'balances'>;
  searchIndex: SearchIndex;
  searchBackend: SearchBackend;
  rateLimits: RateLimitStore;
  redis: Redis | undefined;
  platformPublicKey: string;
  treasuryAddress: string;
  topupMode: TopupMode;
  catalogStaleMs: number;
  /** Dependencies whose being down fails readiness besides the database (`FAREBOX_READY_REQUIRES`). */
  readyRequires: readonly DependencyName[];
  /** Whether an embedding model is configured (`FAREBOX_MODEL_DIR` or download allowed). */
  modelConfigured: boolean;
  dependencies: DependencyTracker;
  /** The network's latest ledger (cached by the caller). */
  networkLedger(): Promise<number>;
  /** The gateway's clock (default `Date.now`): the catalog's age and the uptime. */
  now?: Clock;
}

export { withTimeout } from './readiness.js';

export function createPlatformService(d: PlatformServiceDeps): PlatformService {
  const { db, network, mirror } = d;
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
    ready: () => readiness(d, now),
    watch(intervalMs) {
      const timer = setInterval(() => void readiness(d, now).catch(() => undefined), intervalMs);
      timer.unref();
      return () => clearInterval(timer);
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
