import { randomBytes } from 'node:crypto';
import type { LedgerHooks, Queryable } from '@farebox/ledger';
import { toJsonInteger, toUsd, type WebhookEventType } from '@farebox/protocol';
import type { NetworkConfig } from '@farebox/stellar';
import { systemClock, type Clock } from '../clock.js';

/**
 * The webhook outbox (docs/webhooks.md). An event is written with
 * {@link emitEvent} in the same database transaction as what it reports, so a
 * crash neither loses nor invents one: the row and its deliveries commit or
 * roll back with the change. Nothing is written when the account has no live
 * endpoint subscribed to the type (the statement costs one indexed look-up).
 * The worker (worker.ts) sends the deliveries.
 *
 * For another part of the gateway (the health code's `service.health_changed`):
 *
 * ```ts
 * import { emitEvent } from '../webhooks/events.js';
 * await db.transaction(async (tx) => {
 *   await tx.query('UPDATE ...');   // the change
 *   await emitEvent(tx, ownerAccountId, 'service.health_changed', { service, from, to, ... });
 * });
 * // or to whoever's wallet an address is: emitEvent(tx, { wallet: ownerAddress }, ...)
 * ```
 *
 * `data` is the event's `data` object, sent as JSON: amounts as
 * `<name>_base_units` (integer) and `<name>_usd`, times as ISO strings. Add
 * the type's payload to docs/webhooks.md.
 */

/** Whose event: an account id, or the account whose custodial wallet is this address (publishers, dispute parties). */
export type EventRecipient = string | { wallet: string };

export interface EmitOptions {
  /** An event that must happen once (a budget's threshold in a period): a second with this key is not written. */
  dedupeKey?: string;
  /** The event's `created_at` (default the machine's time). */
  now?: Clock;
}

/** `evt_` + 24 random base64url characters (144 bits). */
export const newEventId = (): string => `evt_${randomBytes(18).toString('base64url')}`;

/** The request body every delivery of an event sends (the exact bytes the signature covers). */
export function eventBody(id: string, type: string, data: Record<string, unknown>, at: number): string {
  return JSON.stringify({ id, type, created_at: new Date(at).toISOString(), data });
}

/** Amounts as webhook payloads carry them: base units (an exact integer) and USD. */
export function money<P extends string>(prefix: P, units: bigint): Record<`${P}_base_units` | `${P}_usd`, number> {
  return { [`${prefix}_base_units`]: toJsonInteger(units), [`${prefix}_usd`]: toUsd(units) } as Record<`${P}_base_units` | `${P}_usd`, number>;
}

/**
 * Writes `type` for the recipient into the outbox, with one delivery per live
 * endpoint subscribed to it, in `q` (the caller's transaction). Answers the
 * event's id, or null when nobody is subscribed (or the dedupe key was used).
 */
export async function emitEvent(
  q: Queryable,
  to: EventRecipient,
  type: WebhookEventType | 'webhook.ping',
  data: Record<string, unknown>,
  options: EmitOptions = {},
): Promise<string | null> {
  const id = newEventId();
  const body = eventBody(id, type, data, (options.now ?? systemClock)());
  const byWallet = typeof to !== 'string';
  const { rows } = await q.query<{ id: string }>(
    `WITH ep AS (
       SELECT e.id, e.account_id FROM gw_webhook_endpoints e
       WHERE e.deleted_at IS NULL AND $2 = ANY (e.events)
         AND ${byWallet ? 'e.account_id IN (SELECT u.id FROM gw_users u WHERE u.wallet_address = $1)' : 'e.account_id = $1'}
     ), ev AS (
       INSERT INTO gw_webhook_events (id, account_id, type, body, dedupe_key)
       SELECT $3, (SELECT account_id FROM ep LIMIT 1), $2, $4, $5 WHERE EXISTS (SELECT 1 FROM ep)
       ON CONFLICT (dedupe_key) DO NOTHING
       RETURNING id
     )
     INSERT INTO gw_webhook_deliveries (id, endpoint_id, event_id)
     SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), ep.id, ev.id FROM ep CROSS JOIN ev
     RETURNING event_id AS id`,
    [byWallet ? to.wallet : to, type, id, body, options.dedupeKey ?? null],
  );
  return rows.length > 0 ? id : null;
}

/**
 * The ledger's hooks (LedgerOptions.hooks) that write `topup.completed`,
 * `settlement.released` and `settlement.failed` in the ledger's own
 * transactions. `emitted` is called after each event written (the worker
 * looks at once, rather than at its next tick).
 */
export function webhookLedgerHooks(o: { network: NetworkConfig; now?: Clock; emitted?: () => void }): LedgerHooks {
  const now = o.now ?? systemClock;
  const after = (id: string | null) => {
    // The transaction commits after the hook: the worker is woken a moment later.
    if (id && o.emitted) setTimeout(o.emitted, 25).unref();
  };
  return {
    async topupCredited(tx, t) {
      const payment = t.payment;
      const data = {
        topup_id: payment ? payment.id : (t.reference ?? '').replace(/^free:/, ''),
        ...money('amount', t.amount),
        paid_with: payment ? 'wallet' : null,
        tx_hash: payment?.txHash ?? null,
        explorer_url: payment?.explorerUrl ?? null,
        ...money('balance', t.balance),
      };
      after(await emitEvent(tx, t.accountId, 'topup.completed', data, { now }));
    },
    async cycleMoved(tx, move) {
      if (move.to !== 'released' && move.to !== 'failed') return;
      const { rows } = await tx.query<Record<string, string | number | null>>(
        `SELECT publisher_owner, escrow_id, claimed_calls, claimed_gross, claimed_fee, claimed_net, error FROM settlement_cycles WHERE id = $1`,
        [move.cycleId],
      );
      const c = rows[0];
      if (!c) return;
      const payout = (move.data.payout ?? {}) as { gross?: string; fee?: string; net?: string; receiver?: string };
      const amount = (k: 'gross' | 'fee' | 'net') => BigInt(payout[k] ?? c[`claimed_${k}`] ?? 0);
      const escrowId = move.escrowId ?? (c.escrow_id as string | null);
      const data = {
        cycle_id: String(move.cycleId),
        receiver: String(c.publisher_owner),
        escrow_id: escrowId,
        escrow_explorer_url: escrowId ? o.network.explorer.contract(escrowId) : null,
        calls: Number(c.claimed_calls),
        ...money('gross', amount('gross')),
        ...money('fee', amount('fee')),
        ...money('net', amount('net')),
        ...(move.to === 'released'
          ? { tx_hash: move.txHash, explorer_url: move.explorerUrl }
          : { previous_state: move.from, error: move.error ?? (c.error as string | null) }),
      };
      const type = move.to === 'released' ? 'settlement.released' : 'settlement.failed';
      after(await emitEvent(tx, { wallet: String(c.publisher_owner) }, type, data, { now }));
    },
  };
}

/** How far a spending budget must be used for `budget.threshold_reached`, percent. */
export const BUDGET_THRESHOLD_PERCENT = 80;

/**
 * `budget.threshold_reached` once per credential and period, when what the
 * budget counts (spent and in flight, as the limit does) reaches
 * {@link BUDGET_THRESHOLD_PERCENT} % of the limit. Called after a hold or a
 * wallet payment under a budget; the event's dedupe key makes it once even
 * when many calls cross it together, on any gateway. Answers whether the
 * budget is past the threshold (nothing more to check this period).
 */
export async function noteBudgetUse(
  q: Queryable,
  use: { accountId: string; credentialId: string; source: 'key' | 'connection'; period: string },
  now: Clock = systemClock,
): Promise<boolean> {
  const { rows } = await q.query<{ used: string; lim: string }>(
    'SELECT (spent + held)::text AS used, lim::text AS lim FROM credential_budgets WHERE credential = $1 AND period = $2',
    [use.credentialId, use.period],
  );
  const r = rows[0];
  if (!r) return false;
  const used = BigInt(r.used);
  const limit = BigInt(r.lim);
  if (limit <= 0n || used * 100n < limit * BigInt(BUDGET_THRESHOLD_PERCENT)) return false;
  const data = {
    credential: { type: use.source === 'key' ? 'api_key' : 'oauth_connection', id: use.credentialId },
    period: use.period,
    threshold_percent: BUDGET_THRESHOLD_PERCENT,
    ...money('limit', limit),
    ...money('used', used),
    ...money('remaining', used > limit ? 0n : limit - used),
  };
  await emitEvent(q, use.accountId, 'budget.threshold_reached', data, { dedupeKey: `budget.threshold_reached:${use.credentialId}:${use.period}`, now });
  return true;
}
