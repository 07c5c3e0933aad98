import {
  bazaarListPage,
  bazaarResource,
  bazaarSearchPage,
  bazaarSearchWindow,
  directPayments,
  DiscoveryError,
  matchesBazaarFilters,
  parseBazaarList,
  parseBazaarSearch,
  type BazaarContext,
  type BazaarFilters,
  type BazaarListPage,
  type BazaarManifest,
  type BazaarResource,
  type BazaarSearchPage,
} from '@farebox/discovery';
import { isValidServiceName } from '@farebox/protocol';
import { servicePayTo, type CatalogMirror, type NetworkConfig, type RegistryAgent } from '@farebox/stellar';
import { GatewayError } from '../errors.js';
import { serviceRails } from '../views.js';
import type { ManifestView } from '../manifests.js';
import type { SearchBackend } from '../search-backend.js';
import { systemClock } from '../clock.js';

/** The x402 bazaar catalog of this gateway (`GET /discovery/resources`, `GET /discovery/search`, also under `/x402`). */
export interface BazaarService {
  /** The reference's listing; the query's parameters as the URL has them. */
  list(query: Iterable<[string, string]>): Promise<BazaarListPage>;
  /** The hybrid search as x402 resources. */
  search(query: Iterable<[string, string]>): Promise<BazaarSearchPage>;
}

type Entry = { service: string; owner: string; endpoint: string };

export interface BazaarServiceDeps {
  mirror: CatalogMirror;
  searchBackend: SearchBackend;
  network: NetworkConfig;
  treasuryAddress: string;
  manifests: {
    details(entry: Entry): Promise<{ view: ManifestView; bazaar: unknown }>;
    peek(entry: Entry): { view: ManifestView; bazaar: unknown } | undefined;
  };
  /** How long one answer waits for the manifests of its page that are not cached yet (default 1.5 s); later ones fill the cache. */
  manifestWaitMs?: number;
  now?: () => number;
  /** A service's health (health/index.ts), shown in each resource's `metadata.health`. */
  health?: (service: string) => Record<string, unknown>;
  /** Whether this gateway takes MPP channel sessions: `mpp-channel` in each resource's `metadata.rails`. */
  mppChannels?: boolean;
}

/** Manifests fetched for one answer at most (the rest are read by later answers). */
const FETCHES_PER_ANSWER = 20;
/** A manifest that could not be read is not asked again for this long. */
const FAILED_FOR_MS = 60_000;

/**
 * Each catalog entry as an x402 resource (`@farebox/discovery`'s
 * `bazaarResource`): the registry's price, endpoint and description, `exact`
 * on testnet/pubnet paid to the treasury, `escrow` as the service's manifest
 * says, its manifest's `bazaar` extension, and `metadata.rails` (every way to
 * pay it, the gateway's included: docs/api.md, "Payment rails"). Filters see the manifests this
 * gateway has read; a page's unread manifests are fetched (through the
 * endpoint guard, cached as for `GET /v1/agents/:service/manifest`) for a
 * moment before the answer.
 */
export function createBazaarService(d: BazaarServiceDeps): BazaarService {
  const treasury = d.treasuryAddress;
  // An exact offer pays the treasury's address for the service (the payer signs which service it pays).
  const ctx: BazaarContext = { network: d.network, treasury, ...(treasury ? { exactPayTo: (service: string) => servicePayTo(treasury, service) } : {}) };
  const waitMs = d.manifestWaitMs ?? 1_500;
  const now = d.now ?? systemClock;
  const failed = new Map<string, number>();

  const manifestOf = (a: RegistryAgent): BazaarManifest | undefined => {
    const m = d.manifests.peek(a);
    return m ? { payments: m.view.payments, dynamicPricing: m.view.dynamic_pricing, bazaar: m.bazaar } : undefined;
  };
  const toResource = (a: RegistryAgent) => {
    const manifest = manifestOf(a);
    const resource = bazaarResource(a, ctx, manifest, d.health?.(a.service));
    // How the service can be paid (docs/api.md, "Payment rails"): the gateway's rails and the offers above.
    resource.metadata.rails = serviceRails(directPayments(ctx, manifest), d.mppChannels ?? false);
    return resource;
  };
  const parsed = <T>(read: () => T): T => {
    try {
      return read();
    } catch (err) {
      if (err instanceof DiscoveryError) throw new GatewayError('BAD_REQUEST', err.message);
      throw err;
    }
  };

  /** Reads the page's uncached manifests (a few, for a moment) and rebuilds those items; an item the filters no longer keep leaves. */
  async function withManifests(items: BazaarResource[], filters: BazaarFilters): Promise<BazaarResource[]> {
    const missing = items
      .map((r) => d.mirror.get(r.serviceName))
      .filter((a): a is RegistryAgent => a !== undefined && !d.manifests.peek(a) && (failed.get(a.service) ?? 0) <= now())
      .slice(0, FETCHES_PER_ANSWER);
    if (missing.length === 0) return items;
    let timer: NodeJS.Timeout | undefined;
    const reads = missing.map((a) => d.manifests.details(a).catch(() => void failed.set(a.service, now() + FAILED_FOR_MS)));
    await Promise.race([Promise.allSettled(reads), new Promise((ok) => (timer = setTimeout(ok, waitMs)))]);
    clearTimeout(timer);
    if (failed.size > 10_000) for (const [k, until] of failed) if (until <= now()) failed.delete(k);
    return items.flatMap((r) => {
      const agent = d.mirror.get(r.serviceName);
      if (!agent || !missing.includes(agent)) return [r];
      const again = toResource(agent);
      return matchesBazaarFilters(again, filters) ? [again] : [];
    });
  }

  return {
    async list(query) {
      const p = parsed(() => parseBazaarList(query));
      const page = bazaarListPage(d.mirror.list(), toResource, p);
      return { ...page, items: await withManifests(page.items, p.filters) };
    },
    async search(query) {
      const p = parsed(() => parseBazaarSearch(query));
      const asked = bazaarSearchWindow(p);
      const { mode, hits } = await d.searchBackend.search(p.query, asked);
      const ranked = hits.flatMap((h) => {
        // A discovery backend may know a registration this gateway's mirror has not read yet (never one whose name breaks the policy).
        const agent = d.mirror.get(h.id) ?? h.agent;
        return agent && isValidServiceName(agent.service) ? [toResource(agent)] : [];
      });
      const page = bazaarSearchPage(ranked, p, asked, hits.length, mode);
      return { ...page, resources: await withManifests(page.resources, p.filters) };
    },
  };
}
