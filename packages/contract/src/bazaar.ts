import { z } from 'zod';
import type { Auth, Operation } from './operation.js';
import { PaymentRail } from './schemas.js';

/**
 * The x402 bazaar catalog (docs/search.md, "x402 bazaar"): every service as an
 * x402 v2 resource in the shapes of the x402 `bazaar` extension
 * (`@x402/extensions/bazaar`'s `DiscoveryResource`, `DiscoveryResourcesResponse`).
 * The gateway answers these routes itself (apps/gateway `bazaar-routes.ts`),
 * at its root and under the facilitator's base `/x402`.
 */

const Json = z.record(z.string(), z.unknown());

export const BazaarOffer = z
  .object({
    scheme: z.string(),
    network: z.string(),
    asset: z.string(),
    amount: z.string().meta({ description: 'The price in base units, a decimal string.' }),
    payTo: z.string(),
    maxTimeoutSeconds: z.number().int(),
    extra: Json,
  })
  .meta({ id: 'BazaarOffer', description: 'An x402 v2 PaymentRequirements: `exact` (paid to the treasury) or `escrow` (paid to the owner).' });

export const BazaarResource = z
  .object({
    resource: z.string().meta({ description: "The service's own endpoint." }),
    type: z.literal('http'),
    x402Version: z.literal(2),
    accepts: z.array(BazaarOffer),
    lastUpdated: z.string().meta({ format: 'date-time' }),
    description: z.string(),
    mimeType: z.string(),
    serviceName: z.string(),
    extensions: z
      .object({ bazaar: Json })
      .optional()
      .meta({ description: "The service manifest's `bazaar` extension (input/output JSON Schema and example)." }),
    metadata: z
      .object({ rails: z.array(PaymentRail).meta({ description: 'How the service can be paid (docs/api.md, "Payment rails").' }) })
      .catchall(z.unknown())
      .meta({ description: "Farebox's details: `price`, `priceBaseUnits`, `ownerWallet`, `health`, `rails`, the manifest's `input`/`output`/`schema`." }),
  })
  .meta({ id: 'BazaarResource', description: 'A service as an x402 resource.' });

export const BazaarResources = z
  .object({
    x402Version: z.literal(2),
    items: z.array(BazaarResource),
    pagination: z.object({ limit: z.number().int(), offset: z.number().int(), total: z.number().int() }),
  })
  .meta({ id: 'BazaarResources', description: 'The x402 bazaar listing (`DiscoveryResourcesResponse`).' });

export const BazaarSearch = z
  .object({
    x402Version: z.literal(2),
    query: z.string(),
    searchMode: z.string().meta({ description: '`hybrid` or `keyword` (no model loaded).' }),
    resources: z.array(BazaarResource),
    partialResults: z.boolean(),
    pagination: z.object({ limit: z.number().int(), cursor: z.string().nullable() }),
  })
  .meta({ id: 'BazaarSearch', description: 'The hybrid search as x402 resources.' });

const text = (description: string) => z.string().optional().meta({ description });
const filters = {
  type: text('`http` or `mcp`'),
  payTo: text('an offer paid to this address'),
  scheme: text('an offer of this scheme (`exact`, `escrow`)'),
  network: text('an offer on this CAIP-2 network (`stellar:testnet`)'),
  extensions: text('resources with this extension (`bazaar`)'),
};
const ListQuery = z.object({ ...filters, limit: text('1 to 500, default 50'), offset: text('0 to 1000000, default 0') });
const SearchQuery = z.object({
  query: z.string().meta({ description: 'what to look for' }),
  ...filters,
  limit: text('1 to 100, default 10'),
  cursor: text('`pagination.cursor` of the previous page'),
});

const NONE: Auth = { kind: 'none' };
const LIST_ERRORS = {
  400: 'a bad parameter (`invalid limit (must be an integer from 1 to 500)`, `unknown parameter: <name>`, ...)',
  429: 'rate limit exceeded (`Retry-After`)',
} as const;
const SEARCH_ERRORS = { 400: '`query required`, `invalid cursor (...)`, or another bad parameter', 429: 'rate limit exceeded (`Retry-After`)' } as const;
const op = <const O extends Operation>(o: O): O => o;

/** The four routes, for the operation table. */
// biome-ignore format: a table, one operation per line
export const bazaarOperations = {
  bazaarResources: op({ id: 'bazaarResources', method: 'GET', path: '/discovery/resources', tag: 'catalog', summary: 'The catalog as x402 resources (the x402 bazaar listing; no credential)', auth: NONE, ipRateLimited: true, input: { query: ListQuery }, status: 200, output: BazaarResources, errors: LIST_ERRORS }),
  bazaarSearch: op({ id: 'bazaarSearch', method: 'GET', path: '/discovery/search', tag: 'catalog', summary: 'The hybrid search as x402 resources (no credential)', auth: NONE, ipRateLimited: true, input: { query: SearchQuery }, status: 200, output: BazaarSearch, errors: SEARCH_ERRORS }),
  facilitatorBazaarResources: op({ id: 'facilitatorBazaarResources', method: 'GET', path: '/x402/discovery/resources', tag: 'catalog', summary: "The x402 bazaar listing under the facilitator's base", auth: NONE, ipRateLimited: true, input: { query: ListQuery }, status: 200, output: BazaarResources, errors: LIST_ERRORS }),
  facilitatorBazaarSearch: op({ id: 'facilitatorBazaarSearch', method: 'GET', path: '/x402/discovery/search', tag: 'catalog', summary: "The x402 bazaar search under the facilitator's base", auth: NONE, ipRateLimited: true, input: { query: SearchQuery }, status: 200, output: BazaarSearch, errors: SEARCH_ERRORS }),
} as const;
