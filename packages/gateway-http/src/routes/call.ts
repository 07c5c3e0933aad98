import { CHANNEL_HEADER, type Principal } from '@farebox/gateway-core';
import { API_BODY_LIMIT, hasBody, isJsonBody, readJsonBody, refuseBody } from '../body.js';
import type { RequestContext } from '../context.js';
import type { RouteKit, RouteSpec } from '../handler.js';
import { idempotencyKey } from '../headers.js';
import { stringHeader, type HttpRequest } from '../http.js';

export const CALL_NEEDS_JSON = 'POST /v1/call takes a JSON body (Content-Type: application/json)';

/**
 * `POST /v1/call`, the hot path of the gateway: behind the `/v1` chain like
 * every account route, with its own body rule: JSON read by
 * {@link readJsonBody} (any value: the call's schema judges it), nothing
 * when the request has none (the schema then answers `service required`),
 * and a 415 for a body of any other type (a form cannot carry the JSON
 * object `payload` is). The answer's status and JSON come from the core.
 */
export function callRoute({ core }: RouteKit): RouteSpec {
  return {
    method: 'POST',
    path: '/v1/call',
    v1: { body: 'own' },
    async handle(ctx: RequestContext) {
      const body = await readCallBody(ctx.req);
      const answer = await core.calls.call(ctx.principal as Principal, body, {
        idempotencyKey: idempotencyKey(ctx.req),
        maxCost: stringHeader(ctx.req, 'farebox-max-cost'),
        approvalId: stringHeader(ctx.req, 'farebox-approval'),
        requestId: ctx.requestId,
      });
      ctx.reply.text(answer.status, answer.json, 'application/json; charset=utf-8');
    },
    // Paid from an MPP channel, with no account (gateway-core's mpp/calls.ts): the answer's headers are MPP's.
    async paid(ctx: RequestContext) {
      const body = await readCallBody(ctx.req);
      const answer = await core.mpp.calls!.call(body, {
        authorization: stringHeader(ctx.req, 'authorization'),
        channel: stringHeader(ctx.req, CHANNEL_HEADER),
        requestId: ctx.requestId,
      });
      for (const [name, value] of Object.entries(answer.headers)) if (name !== 'content-type') ctx.reply.set(name, value);
      ctx.reply.text(answer.status, answer.json, String(answer.headers['content-type'] ?? 'application/json; charset=utf-8'));
    },
  };
}

function readCallBody(req: HttpRequest): Promise<unknown> {
  if (!hasBody(req)) return Promise.resolve(undefined);
  if (isJsonBody(req)) return readJsonBody(req, { limit: API_BODY_LIMIT, strict: false });
  if (req.headers['content-length'] === '0') return Promise.resolve(undefined);
  return refuseBody(req, 415, CALL_NEEDS_JSON, 'type.unsupported');
}
