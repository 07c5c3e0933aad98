import { PLATFORM_FEE_BPS } from '@farebox/protocol';
import type { Database } from './db.js';
import { verifyChannels } from './channels.js';
import { verifyExactIntents } from './exact-intents.js';
import { verifyExactPayments } from './exact-payments.js';
import { verifyExactRefunds } from './exact-refunds.js';
import { big, str, type Row } from './rows.js';
import type { VerifyMismatch, VerifyReport } from './types.js';

// The audit: balances and holds recomputed from the journal, and conservation.

export async function verify(db: Database): Promise<VerifyReport> {
  const mismatches: VerifyMismatch[] = [];
  const balances = await db.query(
    `SELECT a.id, a.balance, COALESCE(j.total, 0) AS journal
     FROM accounts a LEFT JOIN (SELECT account_id, sum(delta_balance) AS total FROM journal GROUP BY account_id) j ON j.account_id = a.id
     WHERE a.balance <> COALESCE(j.total, 0)`,
  );
  for (const r of balances.rows) mismatches.push({ kind: 'balance', id: str(r.id), expected: str(r.journal), actual: str(r.balance) });
  const holds = await db.query(
    `SELECT h.id, h.state, h.amount, COALESCE(j.held, 0) AS held, j.kinds
     FROM holds h LEFT JOIN (
       SELECT hold_id, sum(delta_held) AS held, string_agg(kind, ',' ORDER BY kind) AS kinds FROM journal WHERE hold_id IS NOT NULL GROUP BY hold_id
     ) j ON j.hold_id = h.id
     WHERE COALESCE(j.held, 0) <> CASE WHEN h.state = 'pending' THEN h.amount ELSE 0 END
        OR j.kinds IS DISTINCT FROM CASE h.state WHEN 'pending' THEN 'hold' WHEN 'posted' THEN 'hold,post' ELSE 'hold,void' END`,
  );
  for (const r of holds.rows) {
    mismatches.push({
      kind: 'hold',
      id: str(r.id),
      expected: `${str(r.state)} (held ${r.state === 'pending' ? str(r.amount) : '0'})`,
      actual: `journal ${str(r.kinds ?? 'none')} (held ${str(r.held)})`,
    });
  }
  const earnings = await db.query(
    `SELECT h.id, h.state, h.posted_amount, e.gross, j.amount AS journal_gross
     FROM holds h
     LEFT JOIN earnings e ON e.hold_id = h.id
     LEFT JOIN journal j ON j.hold_id = h.id AND j.kind = 'post'
     WHERE (h.state = 'posted') <> (e.id IS NOT NULL)
        OR (e.id IS NOT NULL AND (e.gross <> h.posted_amount OR j.amount IS DISTINCT FROM e.gross))`,
  );
  for (const r of earnings.rows) {
    mismatches.push({
      kind: 'earning',
      id: str(r.id),
      expected: `${str(r.state)} ${str(r.posted_amount ?? '-')}`,
      actual: `earning ${str(r.gross ?? 'none')} journal ${str(r.journal_gross ?? 'none')}`,
    });
  }
  // Every reference of the per-call rows names a row that exists (no foreign keys check them per row:
  // migrations 0004 and 0007), an earning's cycle is its owner's and its batch is its cycle's.
  const references = await db.query(
    `SELECT 'holds.account_id' AS ref, h.id::text AS id, h.account_id AS target, NULL AS found FROM holds h WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = h.account_id)
     UNION ALL
     SELECT 'journal.account_id', j.id::text, j.account_id, NULL FROM journal j WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.id = j.account_id)
     UNION ALL
     SELECT 'journal.hold_id', j.id::text, j.hold_id::text, NULL FROM journal j WHERE j.hold_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.id = j.hold_id AND h.account_id = j.account_id)
     UNION ALL
     SELECT 'earnings.hold_id', e.id::text, e.hold_id::text, NULL FROM earnings e WHERE e.hold_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM holds h WHERE h.id = e.hold_id AND h.account_id = e.payer_account_id)
     UNION ALL
     SELECT 'earnings.cycle_id', e.id::text, e.cycle_id::text, (SELECT 'the cycle of ' || c.publisher_owner FROM settlement_cycles c WHERE c.id = e.cycle_id) FROM earnings e
     WHERE e.cycle_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM settlement_cycles c WHERE c.id = e.cycle_id AND c.publisher_owner = e.publisher_owner)
     UNION ALL
     SELECT 'earnings.funding_batch_id', e.id::text, e.funding_batch_id::text, (SELECT 'a batch of cycle ' || b.cycle_id FROM funding_batches b WHERE b.id = e.funding_batch_id) FROM earnings e
     WHERE e.funding_batch_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM funding_batches b WHERE b.id = e.funding_batch_id AND b.cycle_id = e.cycle_id)`,
  );
  const named: Record<string, string> = {
    'earnings.cycle_id': "names a cycle of the earning's owner",
    'earnings.funding_batch_id': "names a funding batch of the earning's cycle",
  };
  for (const r of references.rows) {
    mismatches.push({
      kind: 'reference',
      id: str(r.id),
      expected: `${str(r.ref)} ${named[str(r.ref)] ?? 'names an existing row'}`,
      actual: r.found ? `${str(r.target)} is ${str(r.found)}` : `no row ${str(r.target)}`,
    });
  }
  // Each cycle's totals (kept on its row by the claims: migration 0006) are its earnings' sums.
  const cycles = await db.query(
    `SELECT c.id, c.claimed_calls, c.claimed_gross, c.claimed_fee, c.claimed_net,
            COALESCE(t.calls, 0) AS calls, COALESCE(t.gross, 0) AS gross, COALESCE(t.fee, 0) AS fee, COALESCE(t.net, 0) AS net
     FROM settlement_cycles c LEFT JOIN (
       SELECT cycle_id, count(*) AS calls, sum(gross) AS gross, sum(fee) AS fee, sum(net) AS net FROM earnings WHERE cycle_id IS NOT NULL GROUP BY cycle_id
     ) t ON t.cycle_id = c.id
     WHERE (c.claimed_calls, c.claimed_gross, c.claimed_fee, c.claimed_net) <> (COALESCE(t.calls, 0), COALESCE(t.gross, 0), COALESCE(t.fee, 0), COALESCE(t.net, 0))`,
  );
  for (const r of cycles.rows) {
    mismatches.push({
      kind: 'cycle',
      id: str(r.id),
      expected: `earnings: ${str(r.calls)} calls, gross ${str(r.gross)}, fee ${str(r.fee)}, net ${str(r.net)}`,
      actual: `cycle: ${str(r.claimed_calls)} calls, gross ${str(r.claimed_gross)}, fee ${str(r.claimed_fee)}, net ${str(r.claimed_net)}`,
    });
  }
  // Each cycle's fee is the one its escrow takes at release: 5 % of its gross, rounded down once (schema 11).
  const fees = await db.query(
    `SELECT id, claimed_gross, claimed_fee, div(claimed_gross::numeric * $1::numeric, 10000) AS due FROM settlement_cycles
     WHERE claimed_fee <> div(claimed_gross::numeric * $1::numeric, 10000)`,
    [PLATFORM_FEE_BPS.toString()],
  );
  for (const r of fees.rows) {
    mismatches.push({
      kind: 'cycle',
      id: str(r.id),
      expected: `fee ${str(r.due)} (5 % of gross ${str(r.claimed_gross)}, rounded down)`,
      actual: `fee ${str(r.claimed_fee)}`,
    });
  }
  mismatches.push(...(await verifyWalletCredits(db)));
  mismatches.push(...(await verifyExactPayments(db)), ...(await verifyExactIntents(db)), ...(await verifyExactRefunds(db)));
  mismatches.push(...(await verifyChannels(db)));
  const totals = await db.query(
    `SELECT
       (SELECT count(*) FROM accounts) AS accounts,
       (SELECT count(*) FROM holds) AS holds,
       (SELECT COALESCE(sum(amount), 0) FROM journal WHERE kind IN ('signup', 'topup')) AS credited,
       (SELECT COALESCE(sum(balance), 0) FROM accounts) AS credits,
       (SELECT COALESCE(sum(amount), 0) FROM holds WHERE state = 'pending') AS held,
       (SELECT COALESCE(sum(gross), 0) FROM earnings WHERE hold_id IS NOT NULL) AS earned`,
  );
  const t = totals.rows[0] as Row;
  const sums = { credited: big(t.credited), credits: big(t.credits), held: big(t.held), earned: big(t.earned) };
  if (sums.credited !== sums.credits + sums.held + sums.earned) {
    mismatches.push({ kind: 'conservation', id: '*', expected: sums.credited.toString(), actual: (sums.credits + sums.held + sums.earned).toString() });
  }
  return { ok: mismatches.length === 0, accounts: Number(t.accounts), holds: Number(t.holds), mismatches, totals: sums };
}

/**
 * The wallet-credit part of {@link verify}: every credit a wallet payment
 * backs has its transaction claimed once (`wallet_credits`, schema 10), the
 * claim's credit is in the journal exactly once, on that account and for that
 * amount, and its payment completed with that transaction.
 */
export async function verifyWalletCredits(db: Database): Promise<VerifyMismatch[]> {
  const found: VerifyMismatch[] = [];
  const claims = await db.query(
    `SELECT c.tx_hash, c.account_id, c.amount, c.payment_id, count(j.id) AS credits,
            string_agg(j.account_id || ' ' || j.amount, ', ' ORDER BY j.id) AS found,
            (SELECT w.state || ' ' || w.kind || ' ' || w.account_id || ' ' || w.amount || ' ' || COALESCE(w.tx_hash, '-') FROM wallet_payments w WHERE w.id = c.payment_id) AS payment
       FROM wallet_credits c LEFT JOIN journal j ON j.kind = 'topup' AND j.reference = 'wallet:' || c.tx_hash
      GROUP BY c.tx_hash, c.account_id, c.amount, c.payment_id
     HAVING count(j.id) <> 1 OR NOT bool_and(j.account_id = c.account_id AND j.amount = c.amount)
         OR NOT EXISTS (SELECT 1 FROM wallet_payments w WHERE w.id = c.payment_id AND w.kind = 'topup' AND w.state = 'completed'
                          AND w.tx_hash = c.tx_hash AND w.account_id = c.account_id AND w.amount = c.amount)`,
  );
  for (const r of claims.rows) {
    const expected = `one credit of ${str(r.amount)} to ${str(r.account_id)} for payment ${str(r.payment_id)} (completed topup ${str(r.account_id)} ${str(r.amount)} ${str(r.tx_hash)})`;
    const credits = Number(r.credits);
    const actual = credits === 0 ? 'no credit in the journal' : `${credits} credit${credits === 1 ? '' : 's'} in the journal (${str(r.found)})`;
    found.push({ kind: 'wallet-credit', id: str(r.tx_hash), expected, actual: `${actual}; payment ${str(r.payment ?? 'missing')}` });
  }
  const unclaimed = await db.query(
    `SELECT w.id, w.account_id, w.amount, w.tx_hash, c.tx_hash AS claimed
       FROM wallet_payments w LEFT JOIN wallet_credits c ON c.payment_id = w.id
      WHERE w.kind = 'topup' AND w.state = 'completed' AND (c.tx_hash IS NULL OR c.tx_hash IS DISTINCT FROM w.tx_hash)`,
  );
  for (const r of unclaimed.rows) {
    found.push({
      kind: 'wallet-credit',
      id: str(r.id),
      expected: `completed wallet payment credited from its own transaction ${str(r.tx_hash ?? '-')}`,
      actual: r.claimed ? `claims transaction ${str(r.claimed)}` : `no claim: transaction ${str(r.tx_hash ?? '-')} backs another credit`,
    });
  }
  return found;
}
