import { expect, it } from 'vitest';
import * as discovery from '@farebox/discovery';

it('exports exactly the documented public API', () => {
  expect(Object.keys(discovery).sort()).toEqual(
    [
      'BAZAAR_LIST_LIMIT',
      'BAZAAR_SEARCH_LIMIT',
      'Bm25Index',
      'DEFAULT_DIMS',
      'DEFAULT_HUB_URL',
      'DEFAULT_MODEL_ID',
      'DiscoveryError',
      'FlatVectorIndex',
      'HEALTH_FAILING_RATE',
      'HEALTH_FLOOR',
      'HEALTH_MIN_CALLS',
      'HEALTH_OK_RATE',
      'MAX_TOKEN_LENGTH',
      'NAME_WEIGHT',
      'attachToCatalog',
      'bazaarListPage',
      'bazaarResource',
      'bazaarSearchPage',
      'bazaarSearchWindow',
      'matchesBazaarFilters',
      'parseBazaarList',
      'parseBazaarSearch',
      'createEmbedder',
      'directPayments',
      'createSearchIndex',
      'healthFactor',
      'healthStatus',
      'rankByHealth',
      'modelPath',
      'prefetchModel',
      'tokenize',
    ].sort(),
  );
});
