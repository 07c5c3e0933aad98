import { parseAmount } from '@farebox/protocol';
import type { Database, Queryable } from './db.js';
import { LedgerError } from './errors.js';
import { big, invalid, text } from './rows.js';
import { BALANCE_CAP, LEDGER_MESSAGES, TOPUP_MAX, type AccountBalance, type LedgerHooks, type OpenAccountResult, type TopupResult } from './types.js';

// Credits: accounts, their balance, top-ups.

/**
 * Parses a top-up amount given in USD (the JSON edge) into base units, with
 * the spec's limit: 0 < amount <= 1000, else `INVALID_AMOUNT` with the spec's
 * message `invalid amount (must be 0 < n <= 1000)`.
 */
export function parseTopupAmount(usd: unknown): bigint {
  let units: bigint;
  try {
    if (typeof usd !== 'number' && typeof usd !== 'string') throw new TypeError('not a number');
    units = parseAmount(usd);
  } catch {
    throw new LedgerError('INVALID_AMOUNT', LEDGER_MESSAGES.invalidTopup, { amount: String(usd) });
  }
  if (units <= 0n || units > TOPUP_MAX) throw new LedgerError('INVALID_AMOUNT', LEDGER_MESSAGES.invalidTopup, { amount: String(usd) });
  return units;
}

export async function openAccount(db: Database, accountId: string, signupCredit: bigint): Promise<OpenAccountResult> {
  text(accountId, 'accountId', 128);
  const { rows } = await db.query(
    `WITH a AS (
       INSERT INTO accounts (id, balance) VALUES ($1, $2::bigint) ON CONFLICT (id) DO NOTHING RETURNING id, balance
     ), j AS (
       INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, reference)
       SELECT id, 'signup', balance, balance, 0, 'signup' FROM a WHERE balance > 0
     )
     SELECT balance FROM a`,
    [accountId, signupCredit.toString()],
  );
  const current = await readBalance(db, accountId);
  return { ...current, created: rows.length === 1 };
}

export async function readBalance(q: Queryable, accountId: string): Promise<AccountBalance> {
  const { rows } = await q.query(
    `SELECT a.balance, COALESCE((SELECT sum(amount) FROM holds WHERE account_id = a.id AND state = 'pending'), 0) AS held
     FROM accounts a WHERE a.id = $1`,
    [accountId],
  );
  const row = rows[0];
  if (!row) throw new LedgerError('ACCOUNT_NOT_FOUND', 'account not found', { accountId });
  const balance = big(row.balance);
  const held = big(row.held);
  return { accountId, balance, held, aggregated: balance + held };
}

export async function topup(
  db: Database,
  accountId: string,
  amount: bigint,
  options: { reference?: string; once?: boolean } = {},
  hooks: LedgerHooks = {},
): Promise<TopupResult> {
  const reference = options.reference === undefined ? null : text(options.reference, 'reference');
  if (options.once && reference === null) invalid('a top-up made once needs a reference', { field: 'reference' });
  return db.transaction(async (tx) => {
    const r = await topupIn(tx, accountId, amount, reference, true, options.once === true);
    if (r.applied) await hooks.topupCredited?.(tx, { accountId, amount, reference, balance: r.balance, payment: null });
    return r;
  });
}

/**
 * A top-up inside an open transaction. `enforceCap: false` is for money
 * already received on chain (a wallet top-up checked against the cap before
 * it was sent): it is credited even if a concurrent top-up took the account
 * over the cap in between.
 */
export async function topupIn(
  tx: Queryable,
  accountId: string,
  amount: bigint,
  reference: string | null,
  enforceCap = true,
  once = false,
): Promise<TopupResult> {
  if (typeof amount !== 'bigint' || amount <= 0n || amount > TOPUP_MAX) {
    throw new LedgerError('INVALID_AMOUNT', LEDGER_MESSAGES.invalidTopup, { amount: String(amount) });
  }
  // Lock the row first: holds and voids of this account wait, so the sum
  // of pending holds read next is exact. Posts only lower the aggregate.
  const locked = await tx.query('SELECT balance FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  if (locked.rows.length === 0) throw new LedgerError('ACCOUNT_NOT_FOUND', 'account not found', { accountId });
  const before = await readBalance(tx, accountId);
  if (once) {
    // Under the account's row lock: a second top-up with this reference finds the first.
    const done = await tx.query(`SELECT 1 FROM journal WHERE account_id = $1 AND kind = 'topup' AND reference = $2`, [accountId, reference]);
    if (done.rows.length > 0) return { accountId, amount, balance: before.balance, held: before.held, aggregated: before.aggregated, applied: false };
  }
  if (enforceCap && before.aggregated + amount > BALANCE_CAP) {
    throw new LedgerError('BALANCE_CAP_EXCEEDED', LEDGER_MESSAGES.balanceCap, {
      amount: amount.toString(),
      aggregated: before.aggregated.toString(),
      cap: BALANCE_CAP.toString(),
    });
  }
  await tx.query('UPDATE accounts SET balance = balance + $2::bigint WHERE id = $1', [accountId, amount.toString()]);
  await tx.query(`INSERT INTO journal (account_id, kind, amount, delta_balance, delta_held, reference) VALUES ($1, 'topup', $2::bigint, $2::bigint, 0, $3)`, [
    accountId,
    amount.toString(),
    reference,
  ]);
  const balance = before.balance + amount;
  return { accountId, amount, balance, held: before.held, aggregated: balance + before.held, applied: true };
}
