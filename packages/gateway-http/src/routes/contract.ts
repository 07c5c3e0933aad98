import { operationList, type Operation } from '@farebox/contract';
import { createApiHandlers, GatewayError, type ApiHandler, type MountedOperationId, type Principal } from '@farebox/gateway-core';
import type { z } from 'zod';
import { hasBody, isJsonBody, readJsonBody, unsafeTextError } from '../body.js';
import { limitAnonymous, type RouteKit, type RouteSpec } from '../handler.js';

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
 * The operations of `@farebox/contract`'s table that have a handler in
 * `@farebox/gateway-core` (`createApiHandlers`): method and path, whether
 * the `/v1` chain guards it (open or authenticated), the per-IP limit of
 * open operations, the parsing of path parameters, query and headers, and
 * the success status all come from the table; the handler gets
 * `(principal, input)` and returns the domain object that is sent as JSON.
 */
export function contractRoutes({ core }: RouteKit): RouteSpec[] {
  const handlers = createApiHandlers(core);
  const specs: RouteSpec[] = [];
  for (const op of operationList as readonly Operation[]) {
    const handler = (handlers as Partial<Record<string, ApiHandler<MountedOperationId>>>)[op.id];
    if (!handler) continue;
    const open = op.auth.kind === 'none';
    specs.push({
      method: op.method,
      path: op.path,
      ...(open ? {} : { v1: { body: 'api' as const } }),
      async handle(ctx) {
        // Open operations take small strict JSON bodies (a dispute's proof).
        if (open && op.input.body && hasBody(ctx.req) && isJsonBody(ctx.req)) ctx.body = await readJsonBody(ctx.req, { limit: 16 * 1024, strict: true });
        if (op.ipRateLimited) await limitAnonymous(core, ctx);
        const input = {
          params: part(op.input.params, ctx.params, true),
          query: part(op.input.query, ctx.query(), true),
          headers: part(op.input.headers, ctx.req.headers),
          body: ctx.body,
        } as Parameters<ApiHandler<MountedOperationId>>[1];
        const out = (await handler(ctx.principal as Principal, input)) as unknown;
        if (op.alsoStatus) {
          const { created, value } = out as { created: boolean; value: unknown };
          return void ctx.reply.json(created ? op.status : op.alsoStatus.status, value);
        }
        ctx.reply.json(op.status, out);
      },
    });
  }
  return specs;
}
