import { FareboxError } from '@farebox/protocol';
/** Every code a {@link LedgerError} may carry. */
export type LedgerErrorCode =
  | 'CONFIG'
  | 'LOCKED'
  | 'MIGRATION_FAILED'
  | 'MIGRATION_CHANGED'
  | 'INVALID_INPUT'
  | 'INVALID_AMOUNT'
  | 'BALANCE_CAP_EXCEEDED'
  | 'INSUFFICIENT_BALANCE'
  | 'BUDGET_EXCEEDED'
  | 'ACCOUNT_NOT_FOUND'
  | 'HOLD_NOT_FOUND'
  | 'IDEMPOTENCY_MISMATCH'
  | 'IDEMPOTENCY_IN_PROGRESS'
  | 'CYCLE_NOT_FOUND'
  | 'INVALID_TRANSITION'
  | 'CYCLE_NOT_OPEN'
  | 'UNFUNDED_EARNINGS'
  | 'FUNDING_BATCH_NOT_FOUND';

/**
 * The one error class of the ledger: a fixed string `code`, the message the
 * API shows (the spec's exact text where the spec has one), and `data`.
 *
 * @example
 * throw new LedgerError('INSUFFICIENT_BALANCE', 'insufficient balance', { needed: '10', available: '5' });
 */
export class LedgerError extends FareboxError<LedgerErrorCode, Record<string, unknown> | undefined> {
  override readonly name: string = 'LedgerError';

  constructor(code: LedgerErrorCode, message: string, data?: Record<string, unknown>, options?: { cause?: unknown }) {
    super(code, message, data, options);
  }
}

/** PostgreSQL SQLSTATE of a driver error, if it is one. */
export function sqlState(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}
