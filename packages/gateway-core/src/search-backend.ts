import { createDiscoveryClient, DiscoveryApiError, type DiscoveryHit } from '@farebox/contract';
import type { SearchIndex, SearchMode, SearchStatus } from '@farebox/discovery';
import type { RegistryAgent } from '@farebox/stellar';
import { GatewayError } from './errors.js';
import { isUnreachable } from './observability/dependencies.js';
import { systemClock, type Clock } from './clock.js';

/** One ranked service: its name, the fused score and, from a remote backend, its registry entry. */
export interface SearchBackendHit {
  id: string;
  score: number;
  agent?: RegistryAgent;
}

/**
 * Where `GET /v1/agents?q=` and the MCP search get their ranking: the
 * in-process index (default) or a discovery backend at `FAREBOX_DISCOVERY_URL`
 * (the same index code, so the same scores).
 */
export interface SearchBackend {
  readonly kind: 'local' | 'remote';
  /** The ranked hits, and which ranking served them (`hybrid`, or `keyword` while no model is loaded). */
  search(query: string, limit: number): Promise<{ mode: SearchMode; hits: SearchBackendHit[] }>;
  /** What `/health` shows under `search`. */
  status(): SearchStatus | RemoteSearchStatus;
  /** Asks a remote backend's `/health` now (readiness); its outcome reaches `onReachable`. */
  probe?(): Promise<void>;
}

export interface RemoteSearchStatus {
  mode: 'remote';
  url: string;
  /** Services and vectors the backend reported last (its `/health`, read at most every 5 s while searching). */
  documents: number;
  vectors: number;
  /** The backend's last `/health` answer: its own mode, catalog size and ledger. */
  backend: { mode: string; documents: number; vectors: number; ledger: number | null } | null;
  lastError: string | null;
}

export function localSearchBackend(index: SearchIndex): SearchBackend {
  return {
    kind: 'local',
    async search(query, limit) {
      const { mode, hits } = await index.searchWithMode(query, { limit });
      return { mode, hits: hits.map((h) => ({ id: h.id, score: h.score })) };
    },
    status: () => index.status(),
  };
}

/**
 * A discovery backend over HTTP, read with `@farebox/contract`'s discovery
 * reader (the one client of that API, shared with `@farebox/client`). Its
 * failures are the gateway's upstream errors (500, the backend's message);
 * bad input it refuses is the caller's 400.
 */
export function remoteSearchBackend(
  baseUrl: string,
  options: {
    timeoutMs?: number;
    fetch?: typeof fetch;
    /** Each answer (`true`) or unreachable backend (`false`, with the error): the gateway's dependency state. */
    onReachable?: (up: boolean, err?: unknown) => void;
    /** The gateway's clock (default the machine's): the backend's health is asked at most every 5 s by it. */
    now?: Clock;
  } = {},
): SearchBackend {
  const now = options.now ?? systemClock;
  const reachable = options.onReachable ?? (() => undefined);
  const client = createDiscoveryClient({ url: baseUrl, timeoutMs: options.timeoutMs ?? 5_000, ...(options.fetch ? { fetch: options.fetch } : {}) });
  const url = client.url;
  let backend: RemoteSearchStatus['backend'] = null;
  let lastError: string | null = null;
  let healthAt = 0;

  async function refreshHealth(): Promise<void> {
    if (now() - healthAt < 5_000) return;
    healthAt = now();
    try {
      const h = await client.health();
      backend = { mode: String(h.mode), documents: Number(h.documents ?? 0), vectors: Number(h.vectors ?? 0), ledger: h.ledger ?? null };
      reachable(true);
    } catch (err) {
      lastError = `discovery backend health: ${reasonOf(err)}`;
      reachable(!isUnreachable(err), err);
    }
  }

  return {
    kind: 'remote',
    async search(query, limit) {
      void refreshHealth();
      let hits: DiscoveryHit[];
      let mode: SearchMode;
      try {
        const answer = await client.search(query, { limit });
        hits = answer.results;
        // The backend says which ranking served the search (older backends: only their `mode`).
        mode = answer.search_mode ?? (answer.mode === 'hybrid' ? 'hybrid' : 'keyword');
      } catch (err) {
        reachable(!isUnreachable(err), err);
        if (err instanceof DiscoveryApiError && err.code === 'NETWORK') {
          lastError = `discovery backend unreachable: ${reasonOf(err)}`;
          throw new GatewayError('UPSTREAM', lastError);
        }
        const status = err instanceof DiscoveryApiError ? err.data.status : undefined;
        const message = err instanceof DiscoveryApiError ? (err.data.serverMessage ?? `HTTP ${status}`) : reasonOf(err);
        lastError = `discovery backend: ${message}`;
        // Bad input is refused the same way by the gateway's own checks first; anything else is upstream.
        throw new GatewayError(status === 400 ? 'BAD_REQUEST' : 'UPSTREAM', status === 400 ? message : lastError);
      }
      lastError = null;
      reachable(true);
      const ranked = hits.map((r) => ({
        id: r.service,
        score: r.score,
        agent: {
          service: r.agent.service,
          owner: r.agent.ownerWallet,
          pricePerCall: r.agent.pricePerCallBaseUnits,
          endpoint: r.agent.endpoint,
          description: r.agent.description,
          totalCalls: 0n,
          totalEarned: 0n,
          createdAt: r.agent.createdAt,
        },
      }));
      return { mode, hits: ranked };
    },
    probe: async () => {
      healthAt = 0;
      await refreshHealth();
    },
    status: () => ({ mode: 'remote', url, documents: backend?.documents ?? 0, vectors: backend?.vectors ?? 0, backend, lastError }),
  };
}

function reasonOf(err: unknown): string {
  if (err instanceof DiscoveryApiError && typeof err.data.reason === 'string') return err.data.reason;
  return err instanceof Error ? err.message : String(err);
}
