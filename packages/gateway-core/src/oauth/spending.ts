import { AsyncLocalStorage } from 'node:async_hooks';
import { formatAmount } from '@farebox/protocol';
import type { Principal } from '../auth/accounts.js';
import type { CreditsPort, createCalls } from '../calls.js';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import { utcDay } from './server.js';

type Calls = ReturnType<typeof createCalls>;

const usd = (units: bigint) => `$${formatAmount(units, { trim: true })}`;

/**
 * The per-connection daily spending limit (UTC day). A call made with an
 * OAuth connection's token reserves its price on the connection's row for the
 * day with one conditional UPDATE before the credits are held, so parallel
 * calls cannot pass the limit together; a voided hold (refund, reprice) gives
 * its amount back. A call over the limit is refused with 403 before anything
 * is charged.
 */
export function createSpendingLimits(options: { db: Db; now?: () => number }) {
  const { db } = options;
  const now = options.now ?? Date.now;
  const context = new AsyncLocalStorage<{ connectionId: string }>();

  async function reserve(connectionId: string, day: string, amount: bigint) {
    await db.query('INSERT INTO gw_oauth_spend (connection_id, day, spent) VALUES ($1, $2::date, 0) ON CONFLICT (connection_id, day) DO NOTHING', [
      connectionId,
      day,
    ]);
    const { rows } = await db.query(
      `UPDATE gw_oauth_spend s SET spent = s.spent + $3::bigint
         FROM gw_oauth_connections c
        WHERE s.connection_id = $1 AND s.day = $2::date AND c.id = s.connection_id AND c.revoked_at IS NULL
          AND (c.daily_limit IS NULL OR s.spent + $3::bigint <= c.daily_limit)
        RETURNING s.spent`,
      [connectionId, day, amount.toString()],
    );
    if (rows.length > 0) return;
    const state = await db.query<{ daily_limit: string | null; revoked_at: Date | null; spent: string | null }>(
      `SELECT c.daily_limit, c.revoked_at, s.spent FROM gw_oauth_connections c LEFT JOIN gw_oauth_spend s ON s.connection_id = c.id AND s.day = $2::date WHERE c.id = $1`,
      [connectionId, day],
    );
    const row = state.rows[0];
    if (!row || row.revoked_at || row.daily_limit === null) throw new GatewayError('UNAUTHENTICATED', 'the connection was disconnected');
    throw new GatewayError(
      'FORBIDDEN',
      `daily spending limit reached: this connection may spend ${usd(BigInt(row.daily_limit))} per day (UTC), has spent ${usd(BigInt(row.spent ?? '0'))} today, and this call costs ${usd(amount)}`,
      { dailyLimit: row.daily_limit, spentToday: row.spent ?? '0', price: amount.toString() },
    );
  }

  async function unreserve(connectionId: string, day: string, amount: bigint) {
    await db.query('UPDATE gw_oauth_spend SET spent = GREATEST(spent - $3::bigint, 0) WHERE connection_id = $1 AND day = $2::date', [
      connectionId,
      day,
      amount.toString(),
    ]);
  }

  async function releaseHold(holdId: string) {
    await db.query(
      `WITH h AS (DELETE FROM gw_oauth_spend_holds WHERE hold_id = $1 RETURNING connection_id, day, amount)
       UPDATE gw_oauth_spend s SET spent = GREATEST(s.spent - h.amount, 0) FROM h WHERE s.connection_id = h.connection_id AND s.day = h.day`,
      [holdId],
    );
  }

  function run<T>(principal: Principal, fn: () => Promise<T>): Promise<T> {
    return principal.via === 'oauth' ? context.run({ connectionId: principal.credentialId }, fn) : fn();
  }

  return {
    /** Runs `fn` (a call) as the principal's connection when the principal holds an OAuth token. */
    run,

    /**
     * Wraps the wallet path (paid on chain when credits fall short) so that,
     * inside {@link run}, its amount counts against the connection's daily
     * limit too: reserved before anything moves, given back when the wallet
     * did not pay (an error, a refused call, or a retry on credits, whose
     * hold reserves on its own).
     */
    wrapWalletPath<I extends { amount: bigint }, R>(pay: (input: I) => Promise<R>, paid: (result: R) => boolean): (input: I) => Promise<R> {
      return async (input) => {
        const ctx = context.getStore();
        if (!ctx) return pay(input);
        const day = utcDay(now());
        await reserve(ctx.connectionId, day, input.amount);
        let result: R;
        try {
          result = await pay(input);
        } catch (err) {
          await unreserve(ctx.connectionId, day, input.amount);
          throw err;
        }
        if (!paid(result)) await unreserve(ctx.connectionId, day, input.amount);
        return result;
      };
    },

    /** Wraps the credits port so holds made inside {@link run} count against the connection's daily limit. */
    wrapCredits(credits: CreditsPort): CreditsPort {
      return {
        async hold(input) {
          const ctx = context.getStore();
          if (!ctx) return credits.hold(input);
          const day = utcDay(now());
          await reserve(ctx.connectionId, day, input.amount);
          let held: { holdId: string };
          try {
            held = await credits.hold(input);
          } catch (err) {
            await unreserve(ctx.connectionId, day, input.amount);
            throw err;
          }
          const { rowCount } = await db.query(
            'INSERT INTO gw_oauth_spend_holds (hold_id, connection_id, day, amount) VALUES ($1, $2, $3::date, $4::bigint) ON CONFLICT (hold_id) DO NOTHING',
            [held.holdId, ctx.connectionId, day, input.amount.toString()],
          );
          // The ledger returned a hold already counted (an idempotent retry): count it once.
          if (!rowCount) await unreserve(ctx.connectionId, day, input.amount);
          return held;
        },
        async post(holdId, input) {
          // Only holds placed for an OAuth connection have spend records.
          if (!context.getStore()) return credits.post(holdId, input);
          const r = await credits.post(holdId, input);
          if (r.posted) await db.query('DELETE FROM gw_oauth_spend_holds WHERE hold_id = $1', [holdId]);
          else await releaseHold(holdId);
          return r;
        },
        async void(holdId, reason) {
          if (!context.getStore()) return credits.void(holdId, reason);
          const r = await credits.void(holdId, reason);
          await releaseHold(holdId);
          return r;
        },
        idempotent: (accountId, key, hash, fn) => credits.idempotent(accountId, key, hash, fn),
      };
    },

    /** Wraps `calls` so every call made with an OAuth token runs as its connection. */
    wrapCalls(calls: Calls): Calls {
      return { ...calls, call: (principal, body, opts) => run(principal, () => calls.call(principal, body, opts)) };
    },
  };
}

export type SpendingLimits = ReturnType<typeof createSpendingLimits>;
