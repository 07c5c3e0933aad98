import type { ErrorAnswer } from '@farebox/contract';
import { FareboxError } from '@farebox/protocol';

/** Every code a gateway operation may fail with; the HTTP layer maps them to statuses in {@link HTTP_STATUS}. */
export type GatewayErrorCode =
  | 'BAD_REQUEST'
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'CSRF'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INSUFFICIENT_BALANCE'
  | 'SPENDING_LIMIT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'UPSTREAM'
  | 'UNAVAILABLE'
  | 'INTERNAL';

/**
 * The gateway's one error class. `message` is exactly what the API returns as
 * `{ "error": message }`.
 *
 * @example
 * throw new GatewayError('BAD_REQUEST', 'service required');
 */
export class GatewayError extends FareboxError<GatewayErrorCode, Record<string, unknown> | undefined> {
  override readonly name: string = 'GatewayError';
  /** Extra response headers (WWW-Authenticate, Retry-After). */
  readonly headers: Record<string, string> | undefined;

  constructor(code: GatewayErrorCode, message: string, data?: Record<string, unknown>, headers?: Record<string, string>, options?: { cause?: unknown }) {
    super(code, message, data, options);
    this.headers = headers;
  }

  /** The HTTP status the API answers this error with. */
  get status(): number {
    return HTTP_STATUS[this.code];
  }
}

/** The one table from error code to HTTP status. */
export const HTTP_STATUS: Record<GatewayErrorCode, number> = {
  BAD_REQUEST: 400,
  UNAUTHENTICATED: 401,
  // `insufficient balance`: the spec leaves the status open; 402 Payment Required says what happened.
  INSUFFICIENT_BALANCE: 402,
  // A credential's spending policy: its limit for the period is reached (docs/api.md, "Spending policies").
  SPENDING_LIMIT: 402,
  FORBIDDEN: 403,
  CSRF: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  UPSTREAM: 500,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

/** Data of an error that stays inside the gateway (the access log and the OAuth endpoints read it): never in an answer. */
const INTERNAL_FIELDS: ReadonlySet<string> = new Set(['rule', 'oauthError']);

/**
 * The one answer of a failure, on every surface: the REST body, `/mcp`'s
 * `_meta["farebox/error"]`, the stdio adapter's tool error and the CLI's
 * `--json` carry these same fields (docs/api.md, "Errors"): `error` (the
 * message), `code` (the error table's code, or the refusal's own, such as
 * `CREDENTIAL_KIND`), the refusal's details, `callId` once a call had its id,
 * and `retryAfterSeconds` when the answer says when to ask again.
 */
export function errorAnswer(err: GatewayError, callId?: string): ErrorAnswer {
  const details: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(err.data ?? {})) if (!INTERNAL_FIELDS.has(k) && v !== undefined) details[k] = v;
  const retryAfter = Number(err.headers?.['Retry-After']);
  return {
    error: err.message,
    code: err.code,
    ...details,
    ...(callId ? { callId } : {}),
    ...(Number.isInteger(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
  };
}

export const badRequest = (message: string) => new GatewayError('BAD_REQUEST', message);
export const notFound = (message: string) => new GatewayError('NOT_FOUND', message);
