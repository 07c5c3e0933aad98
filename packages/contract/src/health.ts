import { z } from 'zod';
import { HealthFeed, ServiceHealthSeries } from './health-schemas.js';
import { ServiceParams } from './inputs.js';
import { NONE, spend, type Operation } from './operation.js';
import { Service } from './schemas.js';

const op = <const O extends Operation>(o: O): O => o;
const AUTH_ERRORS = {
  401: 'missing or invalid credential (`authentication required`, `invalid credential`, `session expired`)',
  403: 'a cookie write without the CSRF token or from another origin, or an OAuth token without the scope',
  429: 'rate limit exceeded (`Retry-After`)',
} as const;
const WindowQuery = z.object({
  window: z
    .string()
    .optional()
    .meta({ description: '`24h` (default: one point per hour) or `7d` (one point per 6 hours)' } as Record<string, unknown>),
});

/** A service with its health, its health over time, and the feed the discovery backend reads (docs/api.md, "Service health"). */
// biome-ignore format: a table, one operation per line
export const healthOperations = {
  getAgent: op({ id: 'getAgent', method: 'GET', path: '/v1/agents/:service', tag: 'catalog', summary: 'One service of the catalog, with its health', auth: spend('agents:read'), input: { params: ServiceParams }, status: 200, output: Service, errors: { ...AUTH_ERRORS, 404: 'service not found' } }),
  agentHealth: op({ id: 'agentHealth', method: 'GET', path: '/v1/agents/:service/health', tag: 'catalog', summary: "A service's calls, answered share and answer times over 24 hours or 7 days", auth: spend('agents:read'), input: { params: ServiceParams, query: WindowQuery }, status: 200, output: ServiceHealthSeries, errors: { ...AUTH_ERRORS, 400: 'window must be 24h or 7d', 404: 'service not found' } }),
  healthFeed: op({ id: 'healthFeed', method: 'GET', path: '/discovery/health', tag: 'catalog', summary: "Every service's health (the discovery backend's feed; no credential)", auth: NONE, ipRateLimited: true, input: {}, status: 200, output: HealthFeed, errors: { 429: 'rate limit exceeded (`Retry-After`)' } }),
} as const;
