import type { ErrorAnswer } from '@farebox/contract';
import { FareboxError } from '@farebox/protocol';
/** Every code a {@link ClientError} may carry. */
export type ClientErrorCode =
  /** Bad options or arguments (nothing was paid). */
  | 'CONFIG'
  /** The service is not in the registry. */
  | 'NOT_FOUND'
  /** The service did not answer with a usable x402 quote (nothing was paid). */
  | 'QUOTE'
  /** The quote offers nothing this client can pay: no `escrow` offer on its network, e.g. a service paid through the gateway only (nothing was paid). */
  | 'NO_DIRECT_PAYMENT'
  /** The quote names a receiver other than the service's registry owner (nothing was paid). */
  | 'PAYTO_MISMATCH'
  /** The quoted price is above the caller's `maxCost` (nothing was paid). */
  | 'PRICE_LIMIT'
  /** An escrow operation (deploy, fund, dispute) failed at the escrow provider. */
  | 'ESCROW'
  /** The service refused the escrow payment (402/409): the escrow stays funded; get it back with `client.dispute(data.escrowId)`. */
  | 'PAYMENT_REFUSED'
  /** The service failed after the escrow was funded: get it back with `client.dispute(data.escrowId)`. */
  | 'SERVICE'
  /** A request could not be sent or timed out. */
  | 'NETWORK'
  /** A server answered with something that does not parse. */
  | 'BAD_RESPONSE'
  /** The service's `/manifest` does not match its registry record ({@link EndpointVerificationError}). */
  | 'ENDPOINT_VERIFICATION'
  /** The gateway answered with an error ({@link GatewayApiError}). */
  | 'GATEWAY_API';

/** Structured data of a {@link ClientError}. */
export interface ClientErrorData {
  /** HTTP status of the answer that caused the error. */
  status?: number;
  /** The server's own `error` message. */
  serverMessage?: string;
  /** The escrow involved, once one exists: funds may be locked there (see `client.dispute`). */
  escrowId?: string;
  /** Base units the escrow `escrowId` still holds after this error (it was funded, the call was not served): a dispute gets them back. */
  lockedBaseUnits?: string;
  /** With `lockedBaseUnits`: what went wrong, without the way back that the message adds. */
  reason?: string;
  /** `NO_DIRECT_PAYMENT`: how the service says it can be paid (its quote's `payments`, e.g. `["platform"]`: through the gateway only). */
  payments?: string[];
  service?: string;
  /** A paid call (`GatewayClient.call`): the call's id, in every answer the gateway gave to it, errors included. */
  callId?: string;
  /** A paid call: the `Idempotency-Key` it was sent with; a call with the same key answers its outcome again and is charged at most once. */
  idempotencyKey?: string;
  /** `NETWORK`: the request timed out (`timeoutMs`), as opposed to a connection that failed or was lost. */
  timedOut?: boolean;
  /** The request's `X-Request-Id` (`GATEWAY_API`: as the gateway echoed it; `NETWORK`: as sent): the gateway's log lines for it carry it. */
  requestId?: string;
  [key: string]: unknown;
}

/**
 * The one error class of `@farebox/client` (with two named subclasses): a
 * fixed string `code`, a message that includes the server's own message, and
 * structured `data`.
 *
 * @example
 * try { await client.call('echo', { text: 'hi' }); } catch (e) {
 *   if (e instanceof ClientError && e.data.escrowId) await client.dispute(e.data.escrowId);
 * }
 */
export class ClientError extends FareboxError<ClientErrorCode, ClientErrorData> {
  override readonly name: string = 'ClientError';

  constructor(code: ClientErrorCode, message: string, data: ClientErrorData = {}, options?: { cause?: unknown }) {
    super(code, message, data, options);
  }
}

/** A service's `/manifest` disagrees with its on-chain registry record (`verifyEndpoint: true`). Nothing was paid. */
export class EndpointVerificationError extends ClientError {
  override readonly name: string = 'EndpointVerificationError';
  constructor(message: string, data: ClientErrorData = {}) {
    super('ENDPOINT_VERIFICATION', message, data);
  }
}

/** An error answer of the gateway REST API: `status` and the gateway's `error` message. */
export class GatewayApiError extends ClientError {
  override readonly name: string = 'GatewayApiError';
  readonly status: number;
  /** The parsed error body (e.g. a failed call's `callId` and `trace`). */
  readonly body: unknown;
  /** The request's `X-Request-Id`: the gateway's log lines for it carry the same id (`reqId`). */
  readonly requestId: string | undefined;
  /** The answer's `Retry-After`, in seconds (a 409 of an attempt still in progress, a 429, a 503), when it had one. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * A refusal by the spending policy of the API key or OAuth connection (402:
   * its limit for the period is reached; 403: the service is not allowed or
   * the price is over its per-call maximum): whose policy, the limit, what
   * remains and when the period resets. Nothing was charged.
   */
  readonly spendingLimit: SpendingLimitRefusal | undefined;
  /**
   * The gateway's answer as every Farebox surface carries it: `error` (the
   * message), `code` (`NOT_FOUND`, `INSUFFICIENT_BALANCE`, `CREDENTIAL_KIND`,
   * ...) and the refusal's details (`callId`, `retryAfterSeconds`, a spending
   * policy's fields): the same fields `/mcp`'s `_meta["farebox/error"]` and
   * the CLI's `--json` give for the same failure. Without a JSON body (a proxy's
   * page), `code` is `HTTP_<status>`.
   */
  readonly answer: ErrorAnswer;

  constructor(status: number, message: string, body?: unknown, requestId?: string, retryAfterSeconds?: number) {
    // A paid call's error answers carry its `callId` (the gateway's log lines and `/v1/transactions` name it too).
    const callId =
      body && typeof body === 'object' && typeof (body as { callId?: unknown }).callId === 'string' ? (body as { callId: string }).callId : undefined;
    super('GATEWAY_API', message, { status, serverMessage: message, ...(requestId ? { requestId } : {}), ...(callId ? { callId } : {}) });
    this.status = status;
    this.body = body;
    this.requestId = requestId;
    this.retryAfterSeconds = retryAfterSeconds;
    this.spendingLimit = spendingLimitOf(body);
    const fields = body && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
    const { trace: _trace, ...rest } = fields;
    this.answer = {
      ...rest,
      error: typeof fields.error === 'string' ? fields.error : message,
      code: typeof fields.code === 'string' ? fields.code : `HTTP_${status}`,
    };
  }
}

/** The machine-readable fields of a spending policy's refusal (docs/api.md, "Spending policies"). */
export interface SpendingLimitRefusal {
  source: 'key' | 'connection';
  limitUsd: number | null;
  remainingUsd: number | null;
  /** ISO 8601; null for a `total` limit or a policy without a limit. */
  resetsAt: string | null;
}

function spendingLimitOf(body: unknown): SpendingLimitRefusal | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, unknown>;
  if (b.limit_source !== 'key' && b.limit_source !== 'connection') return undefined;
  const num = (v: unknown) => (typeof v === 'number' ? v : null);
  return {
    source: b.limit_source,
    limitUsd: num(b.limit_usd),
    remainingUsd: num(b.remaining_usd),
    resetsAt: typeof b.resets_at === 'string' ? b.resets_at : null,
  };
}
