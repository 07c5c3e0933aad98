import type express from 'express';
import type { Request } from 'express';
import { operationList, type Operation } from '@farebox/contract';
import {
  createApiHandlers,
  enforceRateLimit,
  GatewayError,
  type ApiHandler,
  type GatewayCore,
  type MountedOperationId,
  type Principal,
} from '@farebox/gateway-core';
import type { z } from 'zod';
import { jsonBody, unsafeTextError } from './body.js';
import { route } from './http.js';

export interface ContractRoutesInput {
  app: express.Express;
  /** The authenticated `/v1` router: credential, CSRF, rate limits and the OAuth scope rule (from the same table) already checked. */
  v1: express.Router;
  core: GatewayCore;
  who(req: Request): Principal;
}

/**
 * Parses one part of a request with the operation's schema: the first problem is the 400 answer.
 * Path parameters and query strings keep to the bodies' text rule too (`%00` in a path is no name).
 */
function part<S extends z.ZodType | undefined>(schema: S, value: unknown, text = false): unknown {
  if (!schema) return {};
  const bad = text ? unsafeTextError(value) : undefined;
  if (bad) throw new GatewayError('BAD_REQUEST', bad.message);
  const r = schema.safeParse(value ?? {});
  if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
  return r.data;
}

/**
 * Mounts the operations of `@farebox/contract`'s table that have a handler in
 * `@farebox/gateway-core` (`createApiHandlers`): method and path, which
 * router (open or authenticated), the per-IP limit of open operations, the
 * parsing of path parameters, query and headers, and the success status all
 * come from the table; the handler gets `(principal, input)` and returns the
 * domain object that is sent as JSON.
 */
export function mountContractRoutes({ app, v1, core, who }: ContractRoutesInput): void {
  const handlers = createApiHandlers(core);
  // Open operations take small strict JSON bodies (a dispute's proof).
  const openJson = jsonBody({ limit: '16kb', strict: true });
  for (const op of operationList as readonly Operation[]) {
    const handler = (handlers as Partial<Record<string, ApiHandler<MountedOperationId>>>)[op.id];
    if (!handler) continue;
    const open = op.auth.kind === 'none';
    const router = open ? app : v1;
    const path = open ? op.path : op.path.replace(/^\/v1/, '');
    const method = op.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete';
    const parsers = open && op.input.body ? [openJson] : [];
    router[method](
      path,
      ...parsers,
      route(async (req, res) => {
        if (op.ipRateLimited) await enforceRateLimit(core.rateLimits, core.config.rateLimits.anonymous, req.ip ?? 'unknown');
        const principal = open ? undefined : who(req);
        const input = {
          params: part(op.input.params, req.params, true),
          query: part(op.input.query, req.query, true),
          headers: part(op.input.headers, req.headers),
          body: req.body,
        } as Parameters<ApiHandler<MountedOperationId>>[1];
        const out = (await handler(principal as Principal, input)) as unknown;
        if (op.alsoStatus) {
          const { created, value } = out as { created: boolean; value: unknown };
          return void res.status(created ? op.status : op.alsoStatus.status).json(value);
        }
        res.status(op.status).json(out);
      }),
    );
  }
}
