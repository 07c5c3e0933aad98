import type { schemas } from '@farebox/contract';
import { BASE_UNIT_NAME, amountFields, toJsonInteger, toUsd } from '@farebox/protocol';
import type { z } from 'zod';
import type { LedgerTransaction } from '@farebox/ledger';
import type { RegistryAgent } from '@farebox/stellar';
import { GatewayError } from './errors.js';

/**
 * The answers' shapes are the contract's (`@farebox/contract`): adding a field
 * to an answer is a change to its schema there, and these view functions then
 * fail to compile until they produce it.
 */
/** `ok`, `provisioning` (the wallet's set-up job has not finished), `unavailable` (the network could not be asked). */
export type WalletStatus = z.output<typeof schemas.WalletStatus>;

/** An amount in every spelling the API carries (`amountFields` of @farebox/protocol). */
export type AmountFieldsOf<P extends string> = Record<`${P}_base_units` | `${P}_lamports` | `${P}_asset_amount` | `${P}_sol` | `${P}_usd`, number>;

/** The Balance object (`GET /v1/balance`). */
export type BalanceView = z.output<typeof schemas.Balance>;

/** A catalog Service item (`GET /v1/agents`). */
export type ServiceView = Omit<z.output<typeof schemas.Service>, 'score'>;

/** A Transaction item (`GET /v1/transactions`). */
export type TransactionView = z.output<typeof schemas.Transaction>;

export function balanceView(credits: bigint, wallet: bigint, walletStatus: WalletStatus): BalanceView {
  return {
    asset: 'USDC' as const,
    base_unit_name: BASE_UNIT_NAME,
    ...amountFields('balance', credits),
    ...amountFields('wallet', wallet),
    ...amountFields('total', credits + wallet),
    wallet_status: walletStatus,
  };
}

/** A way to pay a service (docs/api.md, "Payment rails"). */
export type PaymentRail = z.output<typeof schemas.PaymentRail>;

/**
 * How a service can be paid: `credits` always, `mpp-channel` while this
 * gateway takes MPP channel sessions, then the x402 schemes the service takes
 * at its own endpoint (`directPayments` of @farebox/discovery: the bazaar's
 * offers) as `x402-exact` and `escrow`.
 */
export function serviceRails(direct: { exact: boolean; escrow: boolean }, mppChannels: boolean): PaymentRail[] {
  return [
    'credits' as const,
    ...(mppChannels ? (['mpp-channel'] as const) : []),
    ...(direct.exact ? (['x402-exact'] as const) : []),
    ...(direct.escrow ? (['escrow'] as const) : []),
  ];
}

/** A catalog Service item (`GET /v1/agents`). Totals come from the gateway ledger, not the contract's counters. */
export function serviceView(agent: RegistryAgent, health: ServiceView['health'], rails: PaymentRail[], stats?: { calls: number; earned: bigint }): ServiceView {
  return {
    service: agent.service,
    pricePerCall: toUsd(agent.pricePerCall),
    pricePerCallBaseUnits: toJsonInteger(agent.pricePerCall),
    pricePerCallLamports: toJsonInteger(agent.pricePerCall),
    description: agent.description,
    endpoint: agent.endpoint,
    ownerWallet: agent.owner,
    acceptedToken: 'USDC' as const,
    totalCalls: stats?.calls ?? 0,
    totalEarned: toUsd(stats?.earned ?? 0n),
    createdAt: agent.createdAt,
    source: 'registry' as const,
    health,
    rails,
  };
}

/** A Transaction item (`GET /v1/transactions`). */
export function transactionView(t: LedgerTransaction): TransactionView {
  return {
    id: t.id,
    type: t.type,
    amount_lamports: toJsonInteger(t.amount),
    amount_base_units: toJsonInteger(t.amount),
    amount_usd: toUsd(t.amount),
    service: t.service,
    tx_signature: t.txSignature,
    explorer_url: t.explorerUrl,
    status: t.status,
    paid_with: t.paidWith,
    note: t.note,
    callId: t.callId,
    idempotencyKey: t.idempotencyKey,
    created_at: t.createdAt.toISOString(),
  };
}

/** Parses an optional integer query parameter within [min, max]; the message names the limit. */
export function intParam(value: unknown, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const text = Array.isArray(value) ? undefined : String(value);
  const n = text !== undefined && /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new GatewayError('BAD_REQUEST', `invalid ${name} (must be ${min} <= n <= ${max})`);
  }
  return n;
}
