import { LedgerError } from '@farebox/ledger';
import { StellarError } from '@farebox/stellar';
import { GatewayError } from './errors.js';

/** Maps other packages' errors onto the gateway's codes, keeping their (spec) messages. */
export function toGatewayError(err: unknown): unknown {
  if (err instanceof LedgerError) {
    switch (err.code) {
      case 'INSUFFICIENT_BALANCE':
        return new GatewayError('INSUFFICIENT_BALANCE', err.message);
      case 'INVALID_AMOUNT':
      case 'BALANCE_CAP_EXCEEDED':
      case 'INVALID_INPUT':
        return new GatewayError('BAD_REQUEST', err.message);
      case 'IDEMPOTENCY_MISMATCH':
        return new GatewayError('CONFLICT', err.message);
      case 'IDEMPOTENCY_IN_PROGRESS': {
        // When the lease of the attempt under way ends: a retry then runs (docs/api.md, "Idempotency").
        const seconds = Number(err.data?.retryAfterSeconds);
        return new GatewayError('CONFLICT', err.message, undefined, Number.isInteger(seconds) && seconds > 0 ? { 'Retry-After': String(seconds) } : undefined);
      }
      case 'ACCOUNT_NOT_FOUND':
      case 'HOLD_NOT_FOUND':
        return new GatewayError('NOT_FOUND', err.message);
      default:
        return err;
    }
  }
  if (err instanceof StellarError) {
    switch (err.code) {
      case 'ALREADY_EXISTS':
        return new GatewayError('CONFLICT', err.message);
      case 'INVALID_INPUT':
        return new GatewayError('BAD_REQUEST', err.message);
      case 'NOT_FOUND':
        return new GatewayError('NOT_FOUND', err.message);
      case 'UNAUTHORIZED':
        return new GatewayError('FORBIDDEN', err.message);
      default:
        return new GatewayError('UPSTREAM', `settlement network: ${err.message}`);
    }
  }
  return err;
}

/** Runs `fn`, translating foreign errors into {@link GatewayError}s. */
export async function translated<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toGatewayError(err);
  }
}
