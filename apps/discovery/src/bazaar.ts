import {
  bazaarListPage,
  bazaarResource,
  bazaarSearchPage,
  bazaarSearchWindow,
  parseBazaarList,
  parseBazaarSearch,
  type BazaarContext,
  type BazaarListPage,
  type BazaarSearchPage,
} from '@farebox/discovery';
import { servicePayTo, type RegistryAgent } from '@farebox/stellar';
import type { HealthFeed } from './health-feed.js';
import type { DiscoveryService } from './service.js';

/**
 * The x402 bazaar catalog over this backend's registry index:
 * `GET /discovery/resources` (the reference's listing, `type`, `payTo`,
 * `scheme`, `network`, `extensions`, `limit`, `offset`) and
 * `GET /discovery/search?query=` (the hybrid search, `limit`, `cursor`), each
 * service as an x402 resource. The backend reads no manifests: offers come
 * from the registry and the network (docs/search.md, "x402 bazaar").
 * Bad parameters throw `DiscoveryError` (`INVALID_QUERY`), answered 400.
 */
export function bazaarHandler(service: DiscoveryService, treasury: string | undefined, health?: HealthFeed) {
  // An exact offer pays the treasury's address for the service (the payer signs which service it pays).
  const ctx: BazaarContext = { network: service.network, treasury, ...(treasury ? { exactPayTo: (name: string) => servicePayTo(treasury, name) } : {}) };
  const toResource = (a: RegistryAgent) => bazaarResource(a, ctx, undefined, health?.of(a.service));
  return {
    list(params: URLSearchParams): BazaarListPage {
      return bazaarListPage(service.list(), toResource, parseBazaarList(params));
    },
    async search(params: URLSearchParams): Promise<BazaarSearchPage> {
      const p = parseBazaarSearch(params);
      const asked = bazaarSearchWindow(p);
      const { mode, hits } = await service.searchWithMode(p.query, asked);
      const ranked = hits.flatMap((h) => {
        const agent = service.get(h.id) ?? (h.meta as RegistryAgent | undefined);
        return agent ? [toResource(agent)] : [];
      });
      return bazaarSearchPage(ranked, p, asked, hits.length, mode);
    },
  };
}
