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
  RATE_LIMITED: 429,
  UPSTREAM: 500,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

export const badRequest = (message: string) => new GatewayError('BAD_REQUEST', message);
export const notFound = (message: string) => new GatewayError('NOT_FOUND', message);
