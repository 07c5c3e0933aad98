export { tokenize, MAX_TOKEN_LENGTH } from './tokenize.js';
export { Bm25Index, NAME_WEIGHT } from './bm25.js';
export type { Bm25Params, Bm25Query } from './bm25.js';
export { FlatVectorIndex } from './vectors.js';
export type { HnswGraph, HnswLoader, HnswModule } from './hnsw.js';
export { createSearchIndex } from './search-index.js';
export type {
  FusionWeights,
  SearchHit,
  SearchIndex,
  SearchIndexOptions,
  SearchOptions,
  SearchMode,
  SearchStatus,
  ServiceDocument,
  SnapshotOptions,
} from './search-types.js';
export { createEmbedder, prefetchModel, modelPath, DEFAULT_MODEL_ID, DEFAULT_DIMS, DEFAULT_HUB_URL } from './embedder.js';
export type { EmbedderOptions } from './embedder.js';
export type { Embedder, EmbedderStatus, EmbedKind, ModelDownloadProgress } from './embedder-types.js';
export { attachToCatalog } from './catalog.js';
export { healthFactor, healthStatus, rankByHealth, HEALTH_FAILING_RATE, HEALTH_FLOOR, HEALTH_MIN_CALLS, HEALTH_OK_RATE } from './health.js';
export type { HealthStatus } from './health.js';
export type { CatalogAgentLike, CatalogChange, CatalogSource, CatalogAttachment } from './catalog.js';
export { DiscoveryError } from './errors.js';
export type { DiscoveryErrorCode } from './errors.js';
export {
  bazaarResource,
  directPayments,
  parseBazaarList,
  parseBazaarSearch,
  matchesBazaarFilters,
  bazaarListPage,
  bazaarSearchPage,
  bazaarSearchWindow,
  BAZAAR_LIST_LIMIT,
  BAZAAR_SEARCH_LIMIT,
} from './bazaar.js';
export type {
  BazaarAgent,
  BazaarContext,
  BazaarManifest,
  BazaarOffer,
  BazaarResource,
  BazaarExtension,
  BazaarFilters,
  BazaarListParams,
  BazaarSearchParams,
  BazaarListPage,
  BazaarSearchPage,
} from './bazaar.js';
