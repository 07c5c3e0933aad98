import type { SearchIndex, SearchStatus } from '@farebox/discovery';
import type { RegistryAgent } from '@farebox/stellar';
import { GatewayError } from './errors.js';

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
  search(query: string, limit: number): Promise<SearchBackendHit[]>;
  /** What `/health` shows under `search`. */
  status(): SearchStatus | RemoteSearchStatus;
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
      return (await index.search(query, { limit })).map((h) => ({ id: h.id, score: h.score }));
    },
    status: () => index.status(),
  };
}

interface RemoteHit {
  service: string;
  score: number;
  agent: { service: string; ownerWallet: string; pricePerCallBaseUnits: string; endpoint: string; description: string; createdAt: number };
}

/**
 * A discovery backend over HTTP (`GET /search`). Its failures are the
 * gateway's upstream errors (500, the backend's message).
 */
export function remoteSearchBackend(baseUrl: string, options: { timeoutMs?: number; fetch?: typeof fetch } = {}): SearchBackend {
  const url = baseUrl.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 5_000;
  const doFetch = options.fetch ?? globalThis.fetch;
  let backend: RemoteSearchStatus['backend'] = null;
  let lastError: string | null = null;
  let healthAt = 0;

  async function refreshHealth(): Promise<void> {
    if (Date.now() - healthAt < 5_000) return;
    healthAt = Date.now();
    try {
      const res = await doFetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
      const h = (await res.json()) as { mode?: string; documents?: number; vectors?: number; ledger?: number | null };
      backend = { mode: String(h.mode), documents: Number(h.documents ?? 0), vectors: Number(h.vectors ?? 0), ledger: h.ledger ?? null };
    } catch (err) {
      lastError = `discovery backend health: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  return {
    kind: 'remote',
    async search(query, limit) {
      void refreshHealth();
      const target = `${url}/search?${new URLSearchParams({ q: query, limit: String(limit) })}`;
      let res: Response;
      try {
        res = await doFetch(target, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
      } catch (err) {
        lastError = `discovery backend unreachable: ${err instanceof Error ? err.message : String(err)}`;
        throw new GatewayError('UPSTREAM', lastError);
      }
      const body = (await res.json().catch(() => null)) as { results?: RemoteHit[]; error?: string } | null;
      if (!res.ok || !body || !Array.isArray(body.results)) {
        lastError = `discovery backend: ${body?.error ?? `HTTP ${res.status}`}`;
        // Bad input is refused the same way by the gateway's own checks first; anything else is upstream.
        throw new GatewayError(res.status === 400 ? 'BAD_REQUEST' : 'UPSTREAM', res.status === 400 && body?.error ? body.error : lastError);
      }
      lastError = null;
      return body.results.map((r) => ({
        id: r.service,
        score: r.score,
        agent: {
          service: r.agent.service,
          owner: r.agent.ownerWallet,
          pricePerCall: BigInt(r.agent.pricePerCallBaseUnits),
          endpoint: r.agent.endpoint,
          description: r.agent.description,
          totalCalls: 0n,
          totalEarned: 0n,
          createdAt: r.agent.createdAt,
        },
      }));
    },
    status: () => ({ mode: 'remote', url, documents: backend?.documents ?? 0, vectors: backend?.vectors ?? 0, backend, lastError }),
  };
}
