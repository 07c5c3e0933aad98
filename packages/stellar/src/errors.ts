import { FareboxError } from '@farebox/protocol';
/** Every code a {@link StellarError} may carry. */
export type StellarErrorCode =
  | 'TX_FAILED'
  | 'NOT_FOUND'
  | 'UNAUTHORIZED'
  | 'ALREADY_EXISTS'
  | 'INVALID_INPUT'
  | 'NO_FRIENDBOT'
  | 'NOT_CONFIGURED'
  | 'RPC_ERROR'
  | 'TIMEOUT';

/** Result codes of a refused or failed transaction, in Horizon's spelling (`tx_bad_seq`, `op_no_trust`). */
export interface ResultCodes {
  transaction: string;
  operations: string[];
}

/**
 * The one error class of `@farebox/stellar`: a fixed string `code`, a message and
 * structured `data` (for failed transactions, `data.resultCodes`).
 *
 * @example
 * try { await accounts.payUsdc(signer, to, 10n) }
 * catch (e) { if (e instanceof StellarError && e.resultCodes?.operations.includes('op_no_trust')) ... }
 */
export class StellarError extends FareboxError<StellarErrorCode, unknown> {
  override readonly name: string = 'StellarError';

  constructor(code: StellarErrorCode, message: string, data?: unknown) {
    super(code, message, data);
  }

  /** The transaction and operation result codes, when the chain refused a transaction. */
  get resultCodes(): ResultCodes | undefined {
    const d = this.data as { resultCodes?: ResultCodes } | undefined;
    return d && typeof d === 'object' ? d.resultCodes : undefined;
  }
}
