import { ClientError } from './errors.js';

/** A registry entry as a discovery backend serves it. */
export interface DiscoveryService {
  service: string;
  /** USD per call. */
  pricePerCall: number;
  /** Exact price in base units (1 USDC = 10,000,000). */
  pricePerCallBaseUnits: bigint;
  description: string;
  endpoint: string;
  /** The registry owner: the account an escrow must name as receiver. */
  ownerWallet: string;
  acceptedToken: 'USDC';
  /** Unix seconds. */
  createdAt: number;
}

/** One search result: the fused score, its keyword and vector parts, and the entry. */
export interface DiscoveryHit {
  service: string;
  score: number;
  bm25: number;
  cosine: number;
  agent: DiscoveryService;
}

export interface DiscoverySearchResult {
  query: string;
  /** `hybrid`, or `keyword-only` when the backend has no embedding model. */
  mode: string;
  results: DiscoveryHit[];
}

export interface DiscoveryPage {
  services: DiscoveryService[];
  total: number;
  /** Pass as `after` for the next page; null on the last one. */
  next: string | null;
}

export interface DiscoveryClientOptions {
  /** The discovery backend's address; default `FAREBOX_DISCOVERY_URL`, then `BACKEND_URL`. */
  url?: string;
  /** Timeout per request, ms (default 10 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  env?: Record<string, string | undefined>;
}

export interface DiscoveryClient {
  readonly url: string;
  /** Hybrid search over the whole registry; `limit` 1 to 100 (default 10). */
  search(query: string, options?: { limit?: number }): Promise<DiscoverySearchResult>;
  /** One page of the catalog, sorted by name; `limit` 1 to 1000 (default 100). */
  listServices(options?: { limit?: number; after?: string }): Promise<DiscoveryPage>;
  /** Every service, page after page. */
  listAllServices(): Promise<DiscoveryService[]>;
  /** One entry, or undefined when the registry has no such service. */
  getService(service: string): Promise<DiscoveryService | undefined>;
  /** The backend's `/health` (mode, documents, vectors, ledger and lag). */
  health(): Promise<Record<string, unknown> & { ready: boolean; mode: string; documents: number; ledger: number | null }>;
}

interface RawService extends Omit<DiscoveryService, 'pricePerCallBaseUnits'> {
  pricePerCallBaseUnits: string;
}

const toService = (r: RawService): DiscoveryService => ({ ...r, pricePerCallBaseUnits: BigInt(r.pricePerCallBaseUnits) });

/**
 * Reads a discovery backend (`farebox-discovery`): search and the catalog with
 * no account, for direct x402 callers. Pair it with `createClient().call()`
 * to pay what it finds.
 *
 * @example
 * const discovery = createDiscoveryClient({ url: 'https://discovery.farebox.example' });
 * const { results } = await discovery.search('convert dollars to euros');
 * await createClient({ secret, escrow: { apiKey }, platformAddress }).call(results[0].service, { amount: 100 });
 */
export function createDiscoveryClient(options: DiscoveryClientOptions = {}): DiscoveryClient {
  const env = options.env ?? (typeof process !== 'undefined' ? process.env : {});
  const given = options.url ?? env.FAREBOX_DISCOVERY_URL ?? env.BACKEND_URL;
  if (!given) throw new ClientError('CONFIG', 'createDiscoveryClient: url required (or FAREBOX_DISCOVERY_URL)');
  let base: URL;
  try {
    base = new URL(given);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new ClientError('CONFIG', `createDiscoveryClient: url must be an http(s) URL, got ${JSON.stringify(given)}`);
  }
  const url = given.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 10_000;
  const doFetch = options.fetch ?? globalThis.fetch;

  async function get<T>(path: string, okStatuses: number[] = [200]): Promise<{ status: number; body: T }> {
    let res: Response;
    try {
      res = await doFetch(`${url}${path}`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      throw new ClientError('NETWORK', `discovery backend ${url} unreachable: ${reason}`, { reason });
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new ClientError('BAD_RESPONSE', `discovery backend answered ${res.status} with non-JSON`, { status: res.status });
    }
    if (!okStatuses.includes(res.status)) {
      const message = body && typeof body === 'object' && typeof (body as { error?: unknown }).error === 'string' ? (body as { error: string }).error : `HTTP ${res.status}`;
      throw new ClientError(res.status === 404 ? 'NOT_FOUND' : 'GATEWAY_API', `discovery backend: ${message}`, { status: res.status, serverMessage: message });
    }
    return { status: res.status, body: body as T };
  }

  const client: DiscoveryClient = {
    url,
    async search(query, opts = {}) {
      const q = new URLSearchParams({ q: query, ...(opts.limit !== undefined ? { limit: String(opts.limit) } : {}) });
      const { body } = await get<{ query: string; mode: string; results: Array<Omit<DiscoveryHit, 'agent'> & { agent: RawService }> }>(`/search?${q}`);
      return { query: body.query, mode: body.mode, results: body.results.map((r) => ({ ...r, agent: toService(r.agent) })) };
    },
    async listServices(opts = {}) {
      const q = new URLSearchParams({ ...(opts.limit !== undefined ? { limit: String(opts.limit) } : {}), ...(opts.after !== undefined ? { after: opts.after } : {}) });
      const { body } = await get<{ agents: RawService[]; total: number; next: string | null }>(`/agents${q.size ? `?${q}` : ''}`);
      return { services: body.agents.map(toService), total: body.total, next: body.next };
    },
    async listAllServices() {
      const out: DiscoveryService[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await client.listServices({ limit: 1000, ...(after !== undefined ? { after } : {}) });
        out.push(...page.services);
        if (page.next === null) return out;
        after = page.next;
      }
    },
    async getService(service) {
      const { status, body } = await get<RawService | { error: string }>(`/agents/${encodeURIComponent(service)}`, [200, 404]);
      return status === 404 ? undefined : toService(body as RawService);
    },
    async health() {
      return (await get<Awaited<ReturnType<DiscoveryClient['health']>>>('/health', [200, 503])).body;
    },
  };
  return client;
}
