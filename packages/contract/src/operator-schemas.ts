import { z } from 'zod';
import { Address, amountFields, BaseUnits, Timestamp } from './schema-parts.js';
import { Settlement } from './schemas.js';

/** The schemas of disputes and of the operator API (`schemas` in `@farebox/contract` holds these and schemas.ts's). */

const AddressAmount = z.object({ address: Address, base_units: BaseUnits });

export const Dispute = z
  .object({
    escrow_id: z.string(),
    state: z.enum(['open', 'resolved']),
    served: z.boolean(),
    reason: z.string(),
    requested_by: Address,
    receiver: Address,
    engagement_id: z.string(),
    ...amountFields('amount'),
    funders: z.array(AddressAmount),
    opened_at: Timestamp,
    escrow_created_at: Timestamp.nullable(),
    dispute_tx: z.string().nullable(),
    dispute_explorer_url: z.string().nullable(),
    resolution: z.enum(['refund', 'split']).nullable(),
    distributions: z.array(AddressAmount).nullable(),
    resolve_tx: z.string().nullable(),
    resolve_explorer_url: z.string().nullable(),
    resolved_by: z.string().nullable(),
    resolved_at: Timestamp.nullable(),
    error: z.string().nullable(),
    escrow_explorer_url: z.string(),
  })
  .meta({ id: 'Dispute', description: 'A dispute on a direct escrow.' });

/** An operator amount: exact base units as a string, USDC and USD. */
export const Money = z.object({ base_units: z.string(), usdc: z.string(), usd: z.number() }).meta({ id: 'Money' });

export const OperatorWhoami = z.object({ operator: z.boolean(), email: z.string() }).meta({ id: 'OperatorWhoami' });

export const Treasury = z
  .object({
    address: Address,
    explorer_url: z.string(),
    network: z.string(),
    /** `ok`, `not_created` (no account on chain yet) or `unavailable` (the network did not answer). */
    status: z.string(),
    balance: Money,
    owed_to_publishers: Money,
    to_fund: Money,
    in_escrows: Money,
    escrows_on_chain: Money.extend({ cycles: z.number().int(), unavailable: z.boolean() }),
    surplus: Money,
    covered: z.boolean(),
    credits_outstanding: Money,
    open_disputes: Money.extend({ count: z.number().int() }),
    publishers: z.array(z.object({ owner: Address, calls: z.number().int(), owed: Money, to_fund: Money, in_escrow: Money })),
    at: Timestamp,
  })
  .meta({ id: 'Treasury', description: "The treasury's on-chain balance against what it owes publishers." });

export const Reconciliation = z
  .object({
    /** True when nothing below needs an operator. */
    ok: z.boolean(),
    /** Wallet-backed credits checked against the chain; `complete` is false when the network did not answer for some. */
    wallet_credits: z.object({
      checked: z.number().int(),
      complete: z.boolean(),
      problems: z.array(z.object({ tx_hash: z.string(), account_id: z.string(), payment_id: z.string(), amount: Money, problem: z.string() })),
    }),
    /** The ledger's own audit (balances, holds, earnings, cycles, wallet credits, conservation). */
    ledger: z.object({ ok: z.boolean(), mismatches: z.array(z.object({ kind: z.string(), id: z.string(), expected: z.string(), actual: z.string() })) }),
    /** The treasury's USDC against what it owes: credits outstanding (account balances) plus earnings still to fund. */
    treasury: z.object({ balance: Money, owed: Money, covered: z.boolean(), status: z.string() }),
    at: Timestamp,
  })
  .meta({
    id: 'Reconciliation',
    description: 'What backs the credits: each wallet-backed credit against its on-chain payment, the ledger audit, and the treasury.',
  });

export const OperatorSettlement = Settlement.extend({
  publisher_owner: Address,
  updated_at: Timestamp,
  stalled: z.boolean(),
  last_failure: z.object({ message: z.string(), at: Timestamp }).nullable(),
}).meta({ id: 'OperatorSettlement' });

export const SettlementRetry = z
  .object({ id: z.string(), from: z.string(), state: z.string(), moved: z.boolean(), error: z.string().nullable(), settlement: Settlement })
  .meta({ id: 'SettlementRetry' });

export const Revenue = z
  .object({ days: z.number().int(), total: Money, points: z.array(z.object({ day: z.string(), calls: z.number().int(), volume: Money, revenue: Money })) })
  .meta({ id: 'Revenue', description: 'Platform fees per UTC day, oldest first.' });

export const AuditEntry = z
  .object({
    id: z.string(),
    at: Timestamp,
    actor: z.string(),
    action: z.string(),
    target: z.string().nullable(),
    outcome: z.enum(['ok', 'denied', 'failed']),
    detail: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'AuditEntry' });
