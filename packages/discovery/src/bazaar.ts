import { ESCROW_SCHEME, PLATFORM_FEE_PCT, formatAmount } from '@farebox/protocol';
import { DiscoveryError } from './errors.js';

/**
 * The x402 `bazaar` catalog (`GET /discovery/resources`, `GET /discovery/search`)
 * over Farebox's registry: each service becomes one x402 v2 resource in the
 * reference's shapes (`@x402/extensions/bazaar`: `DiscoveryResource`,
 * `DiscoveryResourcesResponse`), so a stock catalog client lists it. The
 * discovery backend and the gateway both answer with these functions.
 */

/** A registry entry, as much of it as a listing needs. */
export interface BazaarAgent {
  service: string;
  pricePerCall: bigint;
  endpoint: string;
  description: string;
  owner: string;
  /** Unix seconds. */
  createdAt: number;
}

/** What the lister knows about the network and the platform. */
export interface BazaarContext {
  /** The network's CAIP-2 id (`stellar:testnet`, `stellar:pubnet`, `stellar:local`) and its USDC. */
  network: { x402Network: string; usdc: { issuer: string; contractId: string } };
  /** The platform treasury (`payTo` of `exact` offers, the escrows' platform address); without it no `exact` offer is listed. */
  treasury?: string | undefined;
  /**
   * The `payTo` of a service's `exact` offer: the treasury's address for that service (`servicePayTo` of
   * `@farebox/stellar`, the treasury muxed with the service's id). Default: the treasury itself.
   */
  exactPayTo?: (service: string) => string;
}

/** What the service's own `/manifest` said (when the lister read it). */
export interface BazaarManifest {
  payments?: readonly string[];
  dynamicPricing?: boolean;
  /** The `bazaar` extension (`{ info, schema }`, as `declareDiscoveryExtension` builds it), when the manifest has one. */
  bazaar?: unknown;
}

export interface BazaarOffer {
  scheme: string;
  network: string;
  asset: string;
  amount: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
}

export interface BazaarResource {
  resource: string;
  type: 'http';
  x402Version: 2;
  accepts: BazaarOffer[];
  lastUpdated: string;
  description: string;
  mimeType: string;
  serviceName: string;
  extensions?: { bazaar: BazaarExtension };
  metadata: Record<string, unknown>;
}

export interface BazaarExtension {
  info: { input: Record<string, unknown>; output?: unknown };
  schema?: unknown;
}

/** Networks where `@x402/stellar`'s `exact` scheme works. */
export const EXACT_NETWORKS: readonly string[] = ['stellar:testnet', 'stellar:pubnet'];
/** Seconds a payment may take, as `@farebox/provider` offers them by default: `exact` 60, `escrow` 300. */
export const BAZAAR_TIMEOUT_SECONDS = { exact: 60, escrow: 300 } as const;
/** `GET /discovery/resources`: `limit` 1 to 500, default 50 (the reference's catalog); `offset` 0 to 1 000 000. */
export const BAZAAR_LIST_LIMIT = { min: 1, max: 500, default: 50 } as const;
export const BAZAAR_MAX_OFFSET = 1_000_000;
/** `GET /discovery/search`: `limit` 1 to 100, default 10; the ranking reaches the best 100 matches. */
export const BAZAAR_SEARCH_LIMIT = { min: 1, max: 100, default: 10 } as const;
export const BAZAAR_SEARCH_WINDOW = 100;
export const BAZAAR_MAX_QUERY = 512;

/** The `bazaar` extension of a manifest, when it has the reference's shape (`info.input.type` http or mcp); else undefined. */
export function bazaarExtension(value: unknown): BazaarExtension | undefined {
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(value) || !isObject(value.info) || !isObject(value.info.input)) return undefined;
  const type = value.info.input.type;
  if (type !== 'http' && type !== 'mcp') return undefined;
  return {
    info: { input: value.info.input, ...(value.info.output !== undefined ? { output: value.info.output } : {}) },
    ...(value.schema !== undefined ? { schema: value.schema } : {}),
  };
}

/**
 * Which x402 schemes a service takes at its own endpoint, as its resource's
 * `accepts` offers them: `exact` on `stellar:testnet` / `stellar:pubnet` with a
 * treasury, unless the service's manifest leaves it out of its `payments`;
 * `escrow` when the manifest lists it, or, with no manifest read, when there
 * is no `exact`.
 */
export function directPayments(
  ctx: Pick<BazaarContext, 'network' | 'treasury'>,
  manifest?: Pick<BazaarManifest, 'payments'>,
): { exact: boolean; escrow: boolean } {
  // A manifest that lists its payments says whether the service takes `exact`; without one, every service on testnet/pubnet does.
  const exact =
    EXACT_NETWORKS.includes(ctx.network.x402Network) && ctx.treasury !== undefined && (manifest?.payments ? manifest.payments.includes('exact') : true);
  const escrow = manifest?.payments ? manifest.payments.includes(ESCROW_SCHEME) : !exact;
  return { exact, escrow };
}

/**
 * One service as an x402 resource. `accepts`: `exact` on `stellar:testnet` /
 * `stellar:pubnet` (USDC's contract, the price in base units, `payTo` the
 * treasury, fees sponsored) unless the service's manifest leaves it out of its
 * `payments`, and `escrow` (paid to the owner) when the manifest lists it, or,
 * with no manifest read, when there is no `exact` offer.
 */
export function bazaarResource(agent: BazaarAgent, ctx: BazaarContext, manifest?: BazaarManifest, health?: Record<string, unknown>): BazaarResource {
  const network = ctx.network.x402Network;
  const amount = agent.pricePerCall.toString();
  const accepts: BazaarOffer[] = [];
  const { exact, escrow } = directPayments(ctx, manifest);
  if (exact) {
    accepts.push({
      scheme: 'exact',
      network,
      asset: ctx.network.usdc.contractId,
      amount,
      payTo: ctx.exactPayTo ? ctx.exactPayTo(agent.service) : ctx.treasury!,
      maxTimeoutSeconds: BAZAAR_TIMEOUT_SECONDS.exact,
      extra: { areFeesSponsored: true, service: agent.service },
    });
  }
  if (escrow) {
    accepts.push({
      scheme: ESCROW_SCHEME,
      network,
      asset: `USDC:${ctx.network.usdc.issuer}`,
      amount,
      payTo: agent.owner,
      maxTimeoutSeconds: BAZAAR_TIMEOUT_SECONDS.escrow,
      extra: { service: agent.service, ...(ctx.treasury ? { escrow: { platformAddress: ctx.treasury, platformFee: PLATFORM_FEE_PCT } } : {}) },
    });
  }
  const bazaar = bazaarExtension(manifest?.bazaar);
  return {
    resource: agent.endpoint,
    type: 'http',
    x402Version: 2,
    accepts,
    lastUpdated: new Date(agent.createdAt * 1000).toISOString(),
    description: agent.description,
    mimeType: 'application/json',
    serviceName: agent.service,
    ...(bazaar ? { extensions: { bazaar } } : {}),
    metadata: {
      service: agent.service,
      description: agent.description,
      price: formatAmount(agent.pricePerCall, { trim: true }),
      priceBaseUnits: amount,
      ownerWallet: agent.owner,
      // How the service answered the paid calls the gateway relayed (docs/api.md, "Service health").
      ...(health ? { health } : {}),
      ...(manifest?.dynamicPricing !== undefined ? { dynamicPricing: manifest.dynamicPricing } : {}),
      ...(bazaar
        ? {
            input: bazaar.info.input,
            ...(bazaar.info.output !== undefined ? { output: bazaar.info.output } : {}),
            ...(bazaar.schema !== undefined ? { schema: bazaar.schema } : {}),
          }
        : {}),
    },
  };
}

/** The filters both routes take (the reference's: `type`, `payTo`, `scheme`, `network`, `extensions`). */
export interface BazaarFilters {
  type?: string;
  payTo?: string;
  scheme?: string;
  network?: string;
  extensions?: string;
}

export interface BazaarListParams {
  filters: BazaarFilters;
  limit: number;
  offset: number;
}

export interface BazaarSearchParams {
  query: string;
  filters: BazaarFilters;
  limit: number;
  /** Where the page starts in the ranking (the `cursor` of the previous page). */
  start: number;
}

const bad = (message: string) => new DiscoveryError('INVALID_QUERY', message);

const FILTERS: Record<keyof BazaarFilters, { pattern: RegExp; message: string }> = {
  type: { pattern: /^(http|mcp)$/, message: 'invalid type (must be http or mcp)' },
  payTo: { pattern: /^[\x21-\x7e]{1,128}$/, message: 'invalid payTo (an address of 1 to 128 printable characters)' },
  scheme: { pattern: /^[a-z0-9][a-z0-9_-]{0,31}$/, message: 'invalid scheme (a scheme name such as exact)' },
  network: { pattern: /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/, message: 'invalid network (a CAIP-2 id such as stellar:testnet)' },
  extensions: { pattern: /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/, message: 'invalid extensions (an extension name such as bazaar)' },
};

/** The query parameters, refusing unknown and repeated ones. */
function readParams(params: Iterable<[string, string]>, allowed: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const [key, value] of params) {
    if (!allowed.includes(key)) throw bad(`unknown parameter: ${key}`);
    if (out.has(key)) throw bad(`parameter given more than once: ${key}`);
    out.set(key, value);
  }
  return out;
}

function intParam(value: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = /^\d{1,7}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw bad(`invalid ${name} (must be an integer from ${min} to ${max})`);
  return n;
}

function readFilters(p: Map<string, string>): BazaarFilters {
  const filters: BazaarFilters = {};
  for (const [name, rule] of Object.entries(FILTERS) as Array<[keyof BazaarFilters, (typeof FILTERS)[keyof BazaarFilters]]>) {
    const value = p.get(name);
    if (value === undefined) continue;
    if (!rule.pattern.test(value)) throw bad(rule.message);
    filters[name] = value;
  }
  return filters;
}

/** `GET /discovery/resources`' parameters; throws `DiscoveryError` (`INVALID_QUERY`) with the message a 400 carries. */
export function parseBazaarList(params: Iterable<[string, string]>): BazaarListParams {
  const p = readParams(params, ['type', 'payTo', 'scheme', 'network', 'extensions', 'limit', 'offset']);
  return {
    filters: readFilters(p),
    limit: intParam(p.get('limit'), 'limit', BAZAAR_LIST_LIMIT.min, BAZAAR_LIST_LIMIT.max, BAZAAR_LIST_LIMIT.default),
    offset: intParam(p.get('offset'), 'offset', 0, BAZAAR_MAX_OFFSET, 0),
  };
}

/** `GET /discovery/search`' parameters; throws `DiscoveryError` (`INVALID_QUERY`) with the message a 400 carries. */
export function parseBazaarSearch(params: Iterable<[string, string]>): BazaarSearchParams {
  const p = readParams(params, ['query', 'type', 'payTo', 'scheme', 'network', 'extensions', 'limit', 'cursor']);
  const query = p.get('query');
  if (query === undefined || query.trim() === '') throw bad('query required');
  if (query.length > BAZAAR_MAX_QUERY) throw bad(`query too long (max ${BAZAAR_MAX_QUERY})`);
  const cursor = p.get('cursor');
  let start = 0;
  if (cursor !== undefined) {
    start = /^\d{1,3}$/.test(cursor) ? Number(cursor) : NaN;
    if (!(start >= 0 && start < BAZAAR_SEARCH_WINDOW)) throw bad('invalid cursor (pass the pagination.cursor of the previous page)');
  }
  return {
    query,
    filters: readFilters(p),
    limit: intParam(p.get('limit'), 'limit', BAZAAR_SEARCH_LIMIT.min, BAZAAR_SEARCH_LIMIT.max, BAZAAR_SEARCH_LIMIT.default),
    start,
  };
}

const hasFilters = (f: BazaarFilters) => Object.keys(f).length > 0;

/** Whether a resource passes the filters (an offer must match `payTo`, `scheme` and `network`; `extensions` names a key of its extensions). */
export function matchesBazaarFilters(r: BazaarResource, f: BazaarFilters): boolean {
  if (f.type !== undefined && r.type !== f.type) return false;
  if (f.payTo !== undefined && !r.accepts.some((a) => a.payTo === f.payTo)) return false;
  if (f.scheme !== undefined && !r.accepts.some((a) => a.scheme === f.scheme)) return false;
  if (f.network !== undefined && !r.accepts.some((a) => a.network === f.network)) return false;
  if (f.extensions !== undefined && !(r.extensions && Object.hasOwn(r.extensions, f.extensions))) return false;
  return true;
}

/** The reference's `DiscoveryResourcesResponse`. */
export interface BazaarListPage {
  x402Version: 2;
  items: BazaarResource[];
  pagination: { limit: number; offset: number; total: number };
}

/**
 * One page of the listing: the entries (in the lister's order) as resources,
 * filtered, then `offset` and `limit`; `total` counts every match. Without a
 * filter only the page's entries are turned into resources.
 */
export function bazaarListPage<A>(entries: readonly A[], toResource: (entry: A) => BazaarResource, p: BazaarListParams): BazaarListPage {
  const end = p.offset + p.limit;
  if (!hasFilters(p.filters)) {
    return { x402Version: 2, items: entries.slice(p.offset, end).map(toResource), pagination: { limit: p.limit, offset: p.offset, total: entries.length } };
  }
  const matching = entries.map(toResource).filter((r) => matchesBazaarFilters(r, p.filters));
  return { x402Version: 2, items: matching.slice(p.offset, end), pagination: { limit: p.limit, offset: p.offset, total: matching.length } };
}

/** The reference's search answer: `resources`, `partialResults`, `pagination: { limit, cursor }`. */
export interface BazaarSearchPage {
  x402Version: 2;
  query: string;
  /** Which ranking served it: `hybrid` (keywords and embeddings) or `keyword` (no model loaded). */
  searchMode: string;
  resources: BazaarResource[];
  /** True when the ranking was cut at its window (100 matches): more may exist past the last cursor. */
  partialResults: boolean;
  pagination: { limit: number; cursor: string | null };
}

/** How many ranked hits to ask the index for: the page and one more, or the whole window when filters drop hits. */
export function bazaarSearchWindow(p: BazaarSearchParams): number {
  return hasFilters(p.filters) ? BAZAAR_SEARCH_WINDOW : Math.min(BAZAAR_SEARCH_WINDOW, p.start + p.limit + 1);
}

/** One page of a search: `ranked` are the index's hits as resources (best first), `asked` the window they were asked with. */
export function bazaarSearchPage(ranked: readonly BazaarResource[], p: BazaarSearchParams, asked: number, hits: number, searchMode: string): BazaarSearchPage {
  const matching = hasFilters(p.filters) ? ranked.filter((r) => matchesBazaarFilters(r, p.filters)) : ranked;
  const end = p.start + p.limit;
  return {
    x402Version: 2,
    query: p.query,
    searchMode,
    resources: matching.slice(p.start, end),
    partialResults: asked === BAZAAR_SEARCH_WINDOW && hits >= BAZAAR_SEARCH_WINDOW,
    pagination: { limit: p.limit, cursor: end < matching.length ? String(end) : null },
  };
}
