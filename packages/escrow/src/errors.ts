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
export class EscrowError extends Error {
  override readonly name = 'EscrowError';
  readonly code: EscrowErrorCode;
  readonly status?: number;
  readonly providerMessage?: string;

  constructor(code: EscrowErrorCode, message: string, options: { status?: number; providerMessage?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.status !== undefined) this.status = options.status;
    if (options.providerMessage !== undefined) this.providerMessage = options.providerMessage;
  }
}
