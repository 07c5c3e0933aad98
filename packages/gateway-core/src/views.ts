import { BASE_UNIT_NAME, amountFields, toJsonInteger, toUsd } from '@farebox/protocol';
import type { LedgerTransaction } from '@farebox/ledger';
import type { RegistryAgent } from '@farebox/stellar';
import { GatewayError } from './errors.js';

/**
 * `ok`; `provisioning` while the wallet's set-up job (account, USDC trustline)
 * has not finished: USDC sent to it now would fail; `unavailable` when the
 * settlement network could not be asked.
 */
export type WalletStatus = 'ok' | 'provisioning' | 'unavailable';

/** An amount in every spelling the API carries (`amountFields` of @farebox/protocol). */
export type AmountFieldsOf<P extends string> = Record<`${P}_base_units` | `${P}_lamports` | `${P}_asset_amount` | `${P}_sol` | `${P}_usd`, number>;

/** The Balance object (`GET /v1/balance`). */
export type BalanceView = { asset: 'USDC'; base_unit_name: string; wallet_status: WalletStatus } & AmountFieldsOf<'balance'> & AmountFieldsOf<'wallet'> & AmountFieldsOf<'total'>;

/** A catalog Service item (`GET /v1/agents`). */
export interface ServiceView {
  service: string;
  pricePerCall: number;
  pricePerCallBaseUnits: number;
  pricePerCallLamports: number;
  description: string;
  endpoint: string;
  ownerWallet: string;
  acceptedToken: 'USDC';
  totalCalls: number;
  totalEarned: number;
  createdAt: number;
  source: 'registry';
}

/** A Transaction item (`GET /v1/transactions`). */
export interface TransactionView {
  id: string;
  type: LedgerTransaction['type'];
  amount_lamports: number;
  amount_base_units: number;
  amount_usd: number;
  service: LedgerTransaction['service'];
  tx_signature: LedgerTransaction['txSignature'];
  explorer_url: LedgerTransaction['explorerUrl'];
  status: LedgerTransaction['status'];
  paid_with: LedgerTransaction['paidWith'];
  note: LedgerTransaction['note'];
  created_at: string;
}

/** The Balance object (`GET /v1/balance`), with the legacy twins. */
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

/** A catalog Service item (`GET /v1/agents`). Totals come from the gateway ledger, not the contract's counters. */
export function serviceView(agent: RegistryAgent, stats?: { calls: number; earned: bigint }): ServiceView {
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
