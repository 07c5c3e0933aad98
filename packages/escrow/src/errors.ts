import { FareboxError } from '@farebox/protocol';
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
    const data = { ...(options.status !== undefined ? { status: options.status } : {}), ...(options.providerMessage !== undefined ? { providerMessage: options.providerMessage } : {}) };
    super(code, message, data, options.cause === undefined ? undefined : { cause: options.cause });
    if (options.status !== undefined) this.status = options.status;
    if (options.providerMessage !== undefined) this.providerMessage = options.providerMessage;
  }
}
