// The discovery backend's HTTP API (`farebox-discovery`: `GET /search`,
// `/agents`, `/agents/:service`, `/health`) and its one reader. It lives in
// the contract because two sides read it that may not reach each other: the
// caller SDK (`createDiscoveryClient` of `@farebox/client`, which adds the
// environment fallbacks and its `ClientError`) and the gateway core (a remote
// search backend). Zod and fetch only.
import { FareboxError } from '@farebox/protocol';
import { z } from 'zod';

/** Every code a {@link DiscoveryApiError} may carry. */
export type DiscoveryApiErrorCode =
  /** Bad options (nothing was sent). */
  | 'CONFIG'
  /** The backend could not be reached or did not answer in time. */
  | 'NETWORK'
  /** The backend answered with something that does not parse. */
  | 'BAD_RESPONSE'
  /** 404: no such service. */
  | 'NOT_FOUND'
  /** Any other error answer (`status`, and the backend's `error` as `serverMessage`). */
  | 'HTTP';

/** Structured data of a {@link DiscoveryApiError}. */
export interface DiscoveryApiErrorData {
  status?: number;
  /** The backend's own `error` message. */
  serverMessage?: string;
  /** Why the request failed, without the backend's address. */
  reason?: string;
  [key: string]: unknown;
}

/**
 * A discovery backend request that failed: a fixed `code`, a message naming
 * the backend, and `data` (`status`, `serverMessage`, `reason`).
 *
 * @example
 * try { await discovery.search('weather'); } catch (e) {
 *   if (e instanceof DiscoveryApiError && e.code === 'NETWORK') console.error('discovery is down:', e.data.reason);
 * }
 */
export class DiscoveryApiError extends FareboxError<DiscoveryApiErrorCode, DiscoveryApiErrorData> {
  override readonly name: string = 'DiscoveryApiError';

  constructor(code: DiscoveryApiErrorCode, message: string, data: DiscoveryApiErrorData = {}) {
    super(code, message, data);
  }
}

const ServiceSchema = z.looseObject({
  service: z.string(),
  pricePerCall: z.number(),
  /** Base units as a decimal string (exact). */
  pricePerCallBaseUnits: z
    .string()
    .regex(/^\d+$/)
    .transform((s) => BigInt(s)),
  description: z.string(),
  endpoint: z.string(),
  ownerWallet: z.string(),
  acceptedToken: z.literal('USDC'),
  createdAt: z.number(),
});

const HitSchema = z.looseObject({ service: z.string(), score: z.number(), bm25: z.number(), cosine: z.number(), agent: ServiceSchema });

/** The answers of the discovery backend, as they cross the wire. */
export const discoveryAnswers = {
  search: z.looseObject({ query: z.string(), mode: z.string(), search_mode: z.enum(['hybrid', 'keyword']).optional(), results: z.array(HitSchema) }),
  agents: z.looseObject({ agents: z.array(ServiceSchema), total: z.number(), next: z.string().nullable() }),
  agent: ServiceSchema,
  health: z.looseObject({ ready: z.boolean(), mode: z.string(), documents: z.number(), vectors: z.number().optional(), ledger: z.number().nullable() }),
  error: z.object({ error: z.string() }),
};

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
  /** `hybrid`, or `keyword-only` when the backend has no embedding model (for this search). */
  mode: string;
  /** Which ranking served this search: `hybrid` or `keyword` (absent from older backends: read `mode`). */
  search_mode?: 'hybrid' | 'keyword';
  results: DiscoveryHit[];
}

export interface DiscoveryPage {
  services: DiscoveryService[];
  total: number;
  /** Pass as `after` for the next page; null on the last one. */
  next: string | null;
}

export interface DiscoveryClientOptions {
  /** The discovery backend's address. */
  url: string;
  /** Timeout per request, ms (default 10 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
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

/**
 * Reads a discovery backend (`farebox-discovery`): search and the catalog,
 * with no account. Every answer is parsed with the schemas above; a failure
 * is a {@link DiscoveryApiError}.
 *
 * @example
 * const discovery = createDiscoveryClient({ url: 'https://discovery.farebox.example' });
 * const { results } = await discovery.search('convert dollars to euros');
 */
export function createDiscoveryClient(options: DiscoveryClientOptions): DiscoveryClient {
  const given = options.url;
  if (!given) throw new DiscoveryApiError('CONFIG', 'createDiscoveryClient: url required');
  try {
    const base = new URL(given);
    if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw new DiscoveryApiError('CONFIG', `createDiscoveryClient: url must be an http(s) URL, got ${JSON.stringify(given)}`);
  }
  const url = given.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 10_000;
  const doFetch = options.fetch ?? globalThis.fetch;

  async function get<S extends z.ZodType>(path: string, schema: S, okStatuses: number[] = [200]): Promise<{ status: number; body: z.output<S> | undefined }> {
    let res: Response;
    try {
      res = await doFetch(`${url}${path}`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
    } catch (e) {
      const reason = e instanceof Error ? e.message : String(e);
      throw new DiscoveryApiError('NETWORK', `discovery backend ${url} unreachable: ${reason}`, { reason });
    }
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new DiscoveryApiError('BAD_RESPONSE', `discovery backend answered ${res.status} with non-JSON`, { status: res.status });
    }
    if (!okStatuses.includes(res.status)) {
      const refused = discoveryAnswers.error.safeParse(body);
      const message = refused.success ? refused.data.error : `HTTP ${res.status}`;
      throw new DiscoveryApiError(res.status === 404 ? 'NOT_FOUND' : 'HTTP', `discovery backend: ${message}`, { status: res.status, serverMessage: message });
    }
    if (res.status === 404) return { status: res.status, body: undefined };
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new DiscoveryApiError(
        'BAD_RESPONSE',
        `discovery backend answered ${path.split('?')[0]} with an unexpected body (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`,
        { status: res.status },
      );
    }
    return { status: res.status, body: parsed.data };
  }

  const client: DiscoveryClient = {
    url,
    async search(query, opts = {}) {
      const q = new URLSearchParams({ q: query, ...(opts.limit !== undefined ? { limit: String(opts.limit) } : {}) });
      const body = (await get(`/search?${q}`, discoveryAnswers.search)).body!;
      return { query: body.query, mode: body.mode, ...(body.search_mode ? { search_mode: body.search_mode } : {}), results: body.results };
    },
    async listServices(opts = {}) {
      const q = new URLSearchParams({
        ...(opts.limit !== undefined ? { limit: String(opts.limit) } : {}),
        ...(opts.after !== undefined ? { after: opts.after } : {}),
      });
      const body = (await get(`/agents${q.size ? `?${q}` : ''}`, discoveryAnswers.agents)).body!;
      return { services: body.agents, total: body.total, next: body.next };
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
      const { body } = await get(`/agents/${encodeURIComponent(service)}`, discoveryAnswers.agent, [200, 404]);
      return body;
    },
    async health() {
      return (await get('/health', discoveryAnswers.health, [200, 503])).body!;
    },
  };
  return client;
}
