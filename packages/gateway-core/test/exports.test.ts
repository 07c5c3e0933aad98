import { expect, it } from 'vitest';
import * as core from '@farebox/gateway-core';

it('exports exactly the runtime names hosts use', () => {
  expect(Object.keys(core).sort()).toEqual([
    'CHANNEL_HEADER',
    'DEFAULT_NETWORK',
    'GATEWAY_MIGRATIONS_DIR',
    'GatewayError',
    'HTTP_STATUS',
    'LOG_LEVELS',
    'MCP_INSTRUCTIONS',
    'MemoryRateLimitStore',
    'MuxedExactStellarScheme',
    'RedisRateLimitStore',
    'asDatabaseUnavailable',
    'callIdOf',
    'createApiHandlers',
    'createFacilitator',
    'createGateway',
    'createLogger',
    'enforceRateLimit',
    'errorAnswer',
    'flushLogger',
    'formatLogLine',
    'gatewayFacilitator',
    'grantOperator',
    'legacySink',
    'listOperators',
    'oauthErrorBody',
    'prettyLines',
    'registerGatewayMcpTools',
    'resolveGatewayConfig',
    'resolveX402Config',
    'revokeOperator',
    'safeEqual',
    'verifyDisputeProof',
  ]);
});
