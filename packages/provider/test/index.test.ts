import { expect, it } from 'vitest';
import * as provider from '../src/index.js';

it('exports exactly the documented runtime API', () => {
  expect(Object.keys(provider).sort()).toEqual([
    'InMemoryReplayStore',
    'MAX_BODY_LIMIT',
    'ProviderError',
    'createProvider',
    'ensureKeypairFile',
    'parseBodyLimit',
    'publicKeyFromSecret',
    'readKeypairFile',
  ]);
});
