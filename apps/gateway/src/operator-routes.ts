import express, { type Request } from 'express';
import { enforceRateLimit, type GatewayCore, type Principal } from '@farebox/gateway-core';
import { jsonBody } from './body.js';
import { route } from './http.js';

export interface OperatorRoutesInput {
  app: express.Express;
  /** The authenticated `/v1` router (credential, CSRF and rate limit already checked). */
  v1: express.Router;
  core: GatewayCore;
  who(req: Request): Principal;
}

/**
 * Disputes and the operator API.
 * - `POST /v1/disputes`, `GET /v1/disputes/:escrowId`: open to anyone (the
 *   funder's signed proof is the credential), rate-limited per IP.
 * - `/v1/operator/*`: authenticated, operators only (403 otherwise, audited).
 */
export function mountOperatorRoutes({ app, v1, core, who }: OperatorRoutesInput): void {
  const op = core.operator;
  const json = jsonBody({ limit: '16kb', strict: true });
  const limited = (req: Request) => enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, req.ip ?? 'unknown');

  app.post(
    '/v1/disputes',
    json,
    route(async (req, res) => {
      await limited(req);
      const r = await op.openDispute(req.body);
      res.status(r.created ? 201 : 200).json(r.dispute);
    }),
  );
  app.get(
    '/v1/disputes/:escrowId',
    route(async (req, res) => {
      await limited(req);
      res.json(await op.disputeStatus(String(req.params.escrowId)));
    }),
  );

  const r = express.Router();
  r.get('/whoami', route(async (req, res) => res.json(await op.whoami(who(req).user))));
  r.get('/disputes', route(async (req, res) => res.json(await op.listDisputes(who(req).user, req.query.state, req.query.limit))));
  r.post('/disputes/:escrowId/resolve', route(async (req, res) => res.json(await op.resolveDispute(who(req).user, String(req.params.escrowId), req.body))));
  r.get('/treasury', route(async (req, res) => res.json(await op.treasury(who(req).user))));
  r.get('/settlements', route(async (req, res) => res.json(await op.settlements(who(req).user, req.query.state, req.query.limit))));
  r.post('/settlements/:id/retry', route(async (req, res) => res.json(await op.retrySettlement(who(req).user, String(req.params.id)))));
  r.get('/revenue', route(async (req, res) => res.json(await op.revenue(who(req).user, req.query.days))));
  r.get('/audit', route(async (req, res) => res.json(await op.audit(who(req).user, req.query.limit))));
  v1.use('/operator', r);
}
