import { safeEqual } from '@farebox/gateway-core';
import { bearerToken } from '../browser-policy.js';
import type { RouteKit, RouteSpec } from '../handler.js';
import { openApiDocument } from '../openapi.js';

/**
 * `GET /health/ready` (503 only when a required dependency is down, else 200
 * `ok` or `degraded` with each dependency's state and effect: docs/operations.md
 * "Health"), `GET /metrics` behind `FAREBOX_METRICS_TOKEN` when configured,
 * and `GET /openapi.json` (the OpenAPI 3.1 document of this API, generated
 * from `@farebox/contract`'s table, naming this gateway as its server, with
 * the MPP discovery parts: `x-service-info`, and `POST /v1/call`'s
 * `x-payment-info` while MPP channel sessions are on).
 */
export function operationsRoutes({ core }: RouteKit): RouteSpec[] {
  const token = core.config.metricsToken;
  let openApi: Record<string, unknown> | undefined;
  return [
    {
      method: 'GET',
      path: '/health/ready',
      async handle(ctx) {
        const r = await core.platform.ready();
        ctx.reply.json(r.ready ? 200 : 503, r);
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      async handle(ctx) {
        if (!token) return void ctx.reply.json(404, { error: 'not found', code: 'NOT_FOUND' });
        const bearer = bearerToken(ctx.req);
        if (!bearer || !safeEqual(bearer, token)) {
          ctx.reply.set('www-authenticate', 'Bearer realm="metrics"');
          return void ctx.reply.json(401, { error: 'metrics need the bearer token (FAREBOX_METRICS_TOKEN)', code: 'UNAUTHENTICATED' });
        }
        ctx.reply.text(200, await core.metrics.registry.metrics(), core.metrics.registry.contentType);
      },
    },
    {
      method: 'GET',
      path: '/openapi.json',
      handle(ctx) {
        openApi ??= openApiDocument({
          serverUrl: core.config.publicOrigin,
          // Found by MPP clients (draft-payment-discovery-00): the channel offer of POST /v1/call while channel sessions are on.
          ...(core.mpp.calls ? { mpp: { currency: core.network.usdc.contractId } } : {}),
        });
        ctx.reply.set('access-control-allow-origin', '*');
        ctx.reply.json(200, openApi);
      },
    },
  ];
}
