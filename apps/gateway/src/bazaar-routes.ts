import express, { type Request, type Response } from 'express';
import { enforceRateLimit, type GatewayCore } from '@farebox/gateway-core';
import { route } from './http.js';

/**
 * The x402 bazaar catalog (docs/search.md, "x402 bazaar"): `GET
 * /discovery/resources` and `GET /discovery/search?query=`, the same under the
 * platform facilitator's base `/x402` (a stock `withBazaar(new
 * HTTPFacilitatorClient({ url: '<gateway>/x402' }))` asks
 * `<url>/discovery/resources`). No credential, the anonymous per-IP limit,
 * CORS open to every origin (read-only, no cookies).
 */
export function bazaarRoutes(core: GatewayCore): express.Router {
  const router = express.Router();
  const cors = (res: Response) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, OPTIONS');
    // The stock client sends Content-Type (and a facilitator's auth headers) on its GET.
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Authorization');
    res.setHeader('Access-Control-Max-Age', '600');
  };
  // The parameters as the URL has them: a repeated one is refused, not merged.
  const query = (req: Request) => new URL(req.originalUrl, 'http://gateway.invalid').searchParams;

  for (const base of ['', '/x402']) {
    router.options([`${base}/discovery/resources`, `${base}/discovery/search`], (_req, res) => {
      cors(res);
      res.status(204).end();
    });
    router.get(
      `${base}/discovery/resources`,
      route(async (req, res) => {
        cors(res);
        await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, req.ip ?? 'unknown');
        res.json(await core.bazaar.list(query(req)));
      }),
    );
    router.get(
      `${base}/discovery/search`,
      route(async (req, res) => {
        cors(res);
        await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, req.ip ?? 'unknown');
        res.json(await core.bazaar.search(query(req)));
      }),
    );
  }
  return router;
}
