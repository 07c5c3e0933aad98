import { enforceRateLimit, gatewayFacilitator, type FacilitatorAnswer } from '@farebox/gateway-core';
import { hasBody, isJsonBody, readJsonBody } from '../body.js';
import type { RequestContext } from '../context.js';
import type { RouteKit, RouteSpec } from '../handler.js';

/**
 * The platform's x402 facilitator (docs/protocol.md, "The x402 facilitator"):
 * `GET /x402/supported`, `POST /x402/verify`, `POST /x402/settle` in the
 * x402 v2 facilitator wire format that `@x402/core`'s `HTTPFacilitatorClient`
 * speaks (`{ x402Version, paymentPayload, paymentRequirements }` in;
 * `SupportedResponse`, `VerifyResponse`, `SettleResponse` out), and `POST
 * /x402/refund` (a payment settled before its service's handler failed, back
 * to its payer: signed by the service's owner, x402/refund.ts). No
 * credential; per-IP and per-payer limits and the daily fee bounds are the
 * facilitator's own (gateway-core `x402/`).
 */
export function x402Routes({ core }: RouteKit): RouteSpec[] {
  const facilitator = gatewayFacilitator(core);
  // A payload is one transaction envelope (a few KB): small strict JSON bodies.
  const body = (ctx: RequestContext) =>
    hasBody(ctx.req) && isJsonBody(ctx.req) ? readJsonBody(ctx.req, { limit: 64 * 1024, strict: true }) : Promise.resolve(undefined);
  const send = (ctx: RequestContext, answer: FacilitatorAnswer) => {
    for (const [k, v] of Object.entries(answer.headers ?? {})) ctx.reply.set(k, v);
    // The access log and farebox_rate_limited_total count refusals by rule.
    if (answer.rule) ctx.rateLimitRule = answer.rule;
    ctx.reply.json(answer.status, answer.body);
  };
  const cors = (ctx: RequestContext, methods: string) => {
    ctx.reply.set('access-control-allow-origin', '*');
    ctx.reply.set('access-control-allow-methods', methods);
    ctx.reply.set('access-control-allow-headers', 'Content-Type, Authorization');
  };
  const post = (path: string, run: (input: unknown, ip: string) => Promise<FacilitatorAnswer>): RouteSpec => ({
    method: 'POST',
    path,
    async handle(ctx) {
      const input = await body(ctx);
      cors(ctx, 'POST, OPTIONS');
      send(ctx, await run(input, ctx.ip()));
    },
  });
  return [
    ...['/x402/supported', '/x402/verify', '/x402/settle', '/x402/refund'].map(
      (path): RouteSpec => ({
        method: 'OPTIONS',
        path,
        handle(ctx) {
          cors(ctx, path.endsWith('supported') ? 'GET, OPTIONS' : 'POST, OPTIONS');
          ctx.reply.empty(204);
        },
      }),
    ),
    {
      method: 'GET',
      path: '/x402/supported',
      async handle(ctx) {
        cors(ctx, 'GET, OPTIONS');
        await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, ctx.ip());
        ctx.reply.json(200, facilitator.supported());
      },
    },
    post('/x402/verify', (input, ip) => facilitator.verify(input, ip)),
    post('/x402/settle', (input, ip) => facilitator.settle(input, ip)),
    post('/x402/refund', (input, ip) => core.x402.refunds.request(input, ip)),
  ];
}
