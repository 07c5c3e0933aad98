import { MAX_BASE_UNITS } from '@farebox/protocol';
import { LedgerError } from './errors.js';
import type { FundingBatch, Earning, Hold, HoldState, PaidWith, WalletPayment } from './types.js';

/** Row mapping and input checks shared by the ledger's parts. */
export type Row = Record<string, unknown>;

export const str = (v: unknown): string => String(v);
export const big = (v: unknown): bigint => BigInt(v as string);
export const bigOrNull = (v: unknown): bigint | null => (v === null || v === undefined ? null : BigInt(v as string));
export const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));
export const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)));
/** A time the statement sent as Unix milliseconds (a number, or its text). */
export const msDate = (v: unknown): Date => new Date(Number(v));
export const dateOrNull = (v: unknown): Date | null => (v === null || v === undefined ? null : date(v));

export function toHold(r: Row): Hold {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    amount: big(r.amount),
    state: r.state as HoldState,
    callId: str(r.call_id),
    service: str(r.service),
    idempotencyKey: strOrNull(r.idempotency_key),
    paidWith: r.paid_with as PaidWith,
    postedAmount: bigOrNull(r.posted_amount),
    voidReason: strOrNull(r.void_reason),
    expiresAt: date(r.expires_at),
    createdAt: date(r.created_at),
    resolvedAt: dateOrNull(r.resolved_at),
  };
}

export function toEarning(r: Row): Earning {
  return {
    id: str(r.id),
    holdId: str(r.hold_id),
    payerAccountId: str(r.payer_account_id),
    publisherOwner: str(r.publisher_owner),
    service: str(r.service),
    gross: big(r.gross),
    fee: big(r.fee),
    net: big(r.net),
    cycleId: strOrNull(r.cycle_id),
    fundingBatchId: strOrNull(r.funding_batch_id),
    createdAt: date(r.created_at),
  };
}

export function toBatch(r: Row): FundingBatch {
  return {
    id: str(r.id),
    cycleId: str(r.cycle_id),
    amount: big(r.amount),
    state: r.state as FundingBatch['state'],
    txHash: strOrNull(r.tx_hash),
    explorerUrl: strOrNull(r.explorer_url),
    createdAt: date(r.created_at),
    confirmedAt: dateOrNull(r.confirmed_at),
  };
}

export function toWalletPayment(r: Row): WalletPayment {
  return {
    id: str(r.id),
    accountId: str(r.account_id),
    kind: r.kind as WalletPayment['kind'],
    callId: str(r.call_id),
    service: strOrNull(r.service),
    publisherOwner: strOrNull(r.publisher_owner),
    amount: big(r.amount),
    state: r.state as WalletPayment['state'],
    escrowId: strOrNull(r.escrow_id),
    txHash: strOrNull(r.tx_hash),
    explorerUrl: strOrNull(r.explorer_url),
    error: strOrNull(r.error),
    data: (r.data ?? {}) as Record<string, unknown>,
    createdAt: date(r.created_at),
    resolvedAt: dateOrNull(r.resolved_at),
    budget: r.budget_credential == null ? null : { credential: str(r.budget_credential), period: str(r.budget_period) },
  };
}

export function invalid(message: string, data?: Record<string, unknown>): never {
  throw new LedgerError('INVALID_INPUT', message, data);
}

export function text(value: unknown, name: string, max = 256): string {
  if (typeof value !== 'string' || value.length === 0) invalid(`${name} required`, { field: name });
  if (value.length > max) invalid(`${name} too long (max ${max})`, { field: name });
  return value;
}

export function positiveAmount(value: unknown, name: string): bigint {
  if (typeof value !== 'bigint') invalid(`${name} must be a bigint of base units`, { field: name });
  if (value <= 0n || value > MAX_BASE_UNITS) {
    throw new LedgerError('INVALID_AMOUNT', `${name} must be between 1 and ${MAX_BASE_UNITS} base units`, { field: name, amount: value.toString() });
  }
  return value;
}

export function positiveInt(value: unknown, name: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    invalid(`${name} must be an integer from 1 to ${max}`, { field: name, value });
  }
  return value;
}

export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
