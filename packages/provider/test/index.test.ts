import { expect, it } from 'vitest';
import * as provider from '../src/index.js';

it('exports exactly the documented runtime API', () => {
  expect(Object.keys(provider).sort()).toEqual([
    'FileServedEscrowStore',
    'InMemoryReplayStore',
    'MAX_BODY_LIMIT',
    'MemoryServedEscrowStore',
    'MuxedExactStellarScheme',
    'ProviderError',
    'RedisReplayStore',
    'WEBHOOK_EVENT_TYPES',
    'WEBHOOK_HEADERS',
    'WEBHOOK_SIGNATURE_HEADER',
    'WEBHOOK_TOLERANCE_SECONDS',
    'createEscrowVerifier',
    'createProvider',
    'ensureKeypairFile',
    'parseBodyLimit',
    'prepareLocalEnv',
    'publicKeyFromSecret',
    'readKeypairFile',
    'signWebhookPayload',
    'verifyWebhook',
  ]);
});
