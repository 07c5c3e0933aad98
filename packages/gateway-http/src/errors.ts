import { asDatabaseUnavailable, callIdOf, errorAnswer, GatewayError, HTTP_STATUS, type GatewayErrorCode } from '@farebox/gateway-core';
import { inputError } from './body.js';
import type { Reply } from './http.js';

/** The code of an error answer the body reader gives (413, 415 or 400). */
export function bodyErrorCode(status: number): GatewayErrorCode {
  return status === 413 ? 'PAYLOAD_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'BAD_REQUEST';
}

/** What the REST answer to a failure was: the rate-limit rule that refused it, if one did (for the access log and metrics). */
export interface Refusal {
  rateLimitRule: string | undefined;
}

/**
 * The REST answer to anything a route threw, written into `reply`: a
 * {@link GatewayError} with its status from the code table, its headers and
 * the body `{ error, code, ...details }` ({@link errorAnswer}: the same fields
 * `/mcp` and the adapter give); a lost database a 503 with Retry-After (never
 * a 500); input the readers refused its 4xx; anything else is logged and
 * answers `500 internal error`.
 */
export function writeError(reply: Reply, thrown: unknown, log: (message: string, err?: unknown) => void): Refusal {
  const err = asDatabaseUnavailable(thrown) ?? thrown;
  if (err instanceof GatewayError) {
    for (const [k, v] of Object.entries(err.headers ?? {})) reply.set(k, v);
    reply.json(HTTP_STATUS[err.code], errorAnswer(err, callIdOf(thrown)));
    const rule = err.code === 'RATE_LIMITED' && typeof err.data?.rule === 'string' ? err.data.rule : undefined;
    return { rateLimitRule: rule };
  }
  const bad = inputError(err);
  if (bad) {
    reply.json(bad.status, { error: bad.message, code: bodyErrorCode(bad.status) });
    return { rateLimitRule: undefined };
  }
  log('request failed', err);
  reply.json(500, { error: 'internal error', code: 'INTERNAL' });
  return { rateLimitRule: undefined };
}
