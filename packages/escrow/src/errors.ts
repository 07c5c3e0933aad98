import { FareboxError } from '@farebox/protocol';
import type { TraceStep } from './payer.js';
/** Every code an {@link EscrowError} may carry. */
export type EscrowErrorCode = 'HTTP' | 'RATE_LIMITED' | 'BAD_RESPONSE' | 'FAILED' | 'NOT_FOUND' | 'CONFIG';

/**
 * The one error class of `@farebox/escrow`. `providerMessage` is the escrow
 * provider's own message ("Escrow not found", "The escrow funds have been
 * released", ...), `status` the HTTP status when there was one.
 *
 * @example
 * try { await escrow.run('releaseFunds', { contractId, releaseSigner: kp.publicKey }, kp) }
 * catch (e) { if (e instanceof EscrowError && e.providerMessage === 'The escrow funds have been released') ... }
 */
export class EscrowError extends FareboxError<EscrowErrorCode, { status?: number; providerMessage?: string }> {
  override readonly name: string = 'EscrowError';
  readonly status?: number;
  readonly providerMessage?: string;

  constructor(code: EscrowErrorCode, message: string, options: { status?: number; providerMessage?: string; cause?: unknown } = {}) {
    const data = {
      ...(options.status !== undefined ? { status: options.status } : {}),
      ...(options.providerMessage !== undefined ? { providerMessage: options.providerMessage } : {}),
    };
    super(code, message, data, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.status !== undefined) this.status = options.status;
    if (options.providerMessage !== undefined) this.providerMessage = options.providerMessage;
  }
}

/** Every code an {@link EscrowPaymentError} may carry. */
export type EscrowPaymentErrorCode =
  /** The service did not answer with a usable x402 quote (nothing was paid). */
  | 'QUOTE'
  /** The quote offers nothing this payer can pay: no `escrow` offer on its network, e.g. a service paid through the gateway only (nothing was paid). */
  | 'NO_DIRECT_PAYMENT'
  /** The quote (or a presented escrow) names a receiver other than the service's owner (nothing was paid). */
  | 'PAYTO_MISMATCH'
  /** The quoted price is above `maxCost` (nothing was paid). */
  | 'PRICE_LIMIT'
  /** An escrow operation (deploy, fund) failed at the escrow provider. */
  | 'ESCROW'
  /** The service refused the escrow payment (402/409): the escrow stays funded; a dispute gets it back. */
  | 'PAYMENT_REFUSED'
  /** The service failed after the escrow was funded: a dispute gets it back. */
  | 'SERVICE'
  /** A request to the service could not be sent or timed out. */
  | 'NETWORK';

/** Structured data of an {@link EscrowPaymentError}. */
export interface EscrowPaymentErrorData {
  /** HTTP status of the service's answer that caused the error. */
  status?: number;
  /** The service's own `error` message. */
  serverMessage?: string;
  /** The escrow involved, once one exists: funds may be locked there. */
  escrowId?: string;
  /** Base units the escrow `escrowId` still holds after this error (it was funded, the call was not served). */
  lockedBaseUnits?: string;
  /** With `lockedBaseUnits`: what went wrong, without the way back that the message adds. */
  reason?: string;
  /** `NO_DIRECT_PAYMENT`: how the service says it can be paid (its quote's `payments`, e.g. `["platform"]`). */
  payments?: string[];
  service?: string;
  /** The steps done so far, the failed one last. */
  trace?: { steps: TraceStep[] };
  [key: string]: unknown;
}

/**
 * A call the escrow payer (`createEscrowPayer`) could not pay or get
 * served: a fixed `code`, a message that says where the money is, and `data`
 * (the escrow, what it still holds, the trace). `@farebox/client` hands it on
 * as a `ClientError` with the same code, message and data.
 *
 * @example
 * try { await payer.pay(target, body); } catch (e) {
 *   if (e instanceof EscrowPaymentError && e.data.lockedBaseUnits) console.error(`escrow ${e.data.escrowId} holds the payment`);
 * }
 */
export class EscrowPaymentError extends FareboxError<EscrowPaymentErrorCode, EscrowPaymentErrorData> {
  override readonly name: string = 'EscrowPaymentError';

  constructor(code: EscrowPaymentErrorCode, message: string, data: EscrowPaymentErrorData = {}) {
    super(code, message, data);
  }
}
