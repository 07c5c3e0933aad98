import express, { type Response } from 'express';
import { enforceRateLimit, gatewayFacilitator, type FacilitatorAnswer, type GatewayCore } from '@farebox/gateway-core';
import { jsonBody } from './body.js';
import { route } from './http.js';

/**
 * The platform's x402 facilitator (docs/protocol.md, "The x402 facilitator"):
 * `GET /x402/supported`, `POST /x402/verify`, `POST /x402/settle` in the
 * x402 v2 facilitator wire format that `@x402/core`'s `HTTPFacilitatorClient`
 * speaks (`{ x402Version, paymentPayload, paymentRequirements }` in;
 * `SupportedResponse`, `VerifyResponse`, `SettleResponse` out). No
 * credential; per-IP and per-payer limits and the daily fee bounds are the
 * facilitator's own (gateway-core `x402/`). Other routes under `/x402` (the
 * bazaar's `/x402/discovery/*`) are mounted by their own routers: this one
 * answers these three paths only.
 */
export function x402Routes(core: GatewayCore, options: { now?: () => number } = {}): express.Router {
  const facilitator = gatewayFacilitator(core, options);
  const router = express.Router();
  // A payload is one transaction envelope (a few KB): small strict JSON bodies.
  const json = jsonBody({ limit: '64kb', strict: true });
  const send = (res: Response, answer: FacilitatorAnswer) => {
    for (const [k, v] of Object.entries(answer.headers ?? {})) res.setHeader(k, v);
    // The access log and farebox_rate_limited_total count refusals by rule.
    if (answer.rule) res.locals.rateLimitRule = answer.rule;
    res.status(answer.status).json(answer.body);
  };
  const cors = (res: Response, methods: string) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Methods', methods);
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Authorization');
  };

  router.options(['/x402/supported', '/x402/verify', '/x402/settle', '/x402/refund'], (req, res) => {
    cors(res, req.path.endsWith('supported') ? 'GET, OPTIONS' : 'POST, OPTIONS');
    res.status(204).end();
  });
  router.get(
    '/x402/supported',
    route(async (req, res) => {
      cors(res, 'GET, OPTIONS');
      await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, req.ip ?? 'unknown');
      res.json(facilitator.supported());
    }),
  );
  router.post(
    '/x402/verify',
    json,
    route(async (req, res) => {
      cors(res, 'POST, OPTIONS');
      send(res, await facilitator.verify(req.body, req.ip ?? 'unknown'));
    }),
  );
  router.post(
    '/x402/settle',
    json,
    route(async (req, res) => {
      cors(res, 'POST, OPTIONS');
      send(res, await facilitator.settle(req.body, req.ip ?? 'unknown'));
    }),
  );
  // A payment settled before its service's handler failed, back to its payer: signed by the service's owner (x402/refund.ts).
  router.post(
    '/x402/refund',
    json,
    route(async (req, res) => {
      cors(res, 'POST, OPTIONS');
      send(res, await core.x402.refunds.request(req.body, req.ip ?? 'unknown'));
    }),
  );
  return router;
}
