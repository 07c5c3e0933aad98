import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import { writeAudit } from './audit.js';

/** The form emails are compared in (the accounts table's `email_normalized`). */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** An account id as `/v1/me` shows it. */
const ACCOUNT_ID = /^acct_[A-Za-z0-9_-]{8,64}$/;

/**
 * Account ids of `FAREBOX_OPERATORS` (comma or space separated). The role is
 * never granted by e-mail: an address can be signed up by anyone who types it
 * first. Every other entry is reported.
 */
export function parseOperatorList(value: string | undefined): { accounts: Set<string>; problems: string[] } {
  const accounts = new Set<string>();
  const problems: string[] = [];
  for (const raw of (value ?? '').split(/[\s,;]+/)) {
    if (!raw) continue;
    if (ACCOUNT_ID.test(raw)) accounts.add(raw);
    else if (raw.includes('@'))
      problems.push(
        `FAREBOX_OPERATORS: "${raw}" is an e-mail address; operators are named by account id (acct_…, the id of /v1/me), or granted with \`farebox operator grant\` once they have an account`,
      );
    else problems.push(`FAREBOX_OPERATORS: "${raw}" is not an account id (acct_…)`);
  }
  return { accounts, problems };
}

/** The existing account an e-mail address or account id names. */
async function accountOf(db: Db, who: string): Promise<{ id: string; email: string } | undefined> {
  const w = who.trim();
  const { rows } = await db.query<{ id: string; email: string }>(
    ACCOUNT_ID.test(w) ? 'SELECT id, email FROM gw_users WHERE id = $1' : 'SELECT id, email FROM gw_users WHERE email_normalized = $1',
    [ACCOUNT_ID.test(w) ? w : normalizeEmail(w)],
  );
  return rows[0];
}

/**
 * Grants the operator role to an existing account (by e-mail or account id).
 * Only the CLI calls this, with direct database access; the public API has no
 * way to grant it. An address with no account is refused: granting it would
 * hand the role to whoever signs up with it. Audited as `operator.grant`.
 */
export async function grantOperator(db: Db, who: string, grantedBy: string): Promise<{ account_id: string; email: string; granted: boolean }> {
  const account = await accountOf(db, who);
  if (!account) {
    // Nothing is granted; the refused attempt is still audited.
    await writeAudit(db, { actor: grantedBy, action: 'operator.grant', target: who.trim(), outcome: 'failed', detail: { reason: 'no such account' } });
    throw new GatewayError(
      'NOT_FOUND',
      `no account ${JSON.stringify(who.trim())}: the operator signs up first, then gets the role (it is never granted to an address with no account)`,
    );
  }
  const { rows } = await db.query(
    'INSERT INTO gw_operator_grants (account_id, granted_by) VALUES ($1, $2) ON CONFLICT (account_id) DO NOTHING RETURNING account_id',
    [account.id, grantedBy],
  );
  await writeAudit(db, {
    actor: grantedBy,
    action: 'operator.grant',
    target: account.id,
    outcome: 'ok',
    detail: { email: account.email, alreadyOperator: rows.length === 0 },
  });
  return { account_id: account.id, email: account.email, granted: rows.length > 0 };
}

/** Takes the role back (CLI only), by e-mail or account id. Audited as `operator.revoke`. */
export async function revokeOperator(db: Db, who: string, revokedBy: string): Promise<{ account_id: string | null; email: string; revoked: boolean }> {
  const account = await accountOf(db, who);
  const { rows } = account ? await db.query('DELETE FROM gw_operator_grants WHERE account_id = $1 RETURNING account_id', [account.id]) : { rows: [] };
  await writeAudit(db, {
    actor: revokedBy,
    action: 'operator.revoke',
    target: account?.id ?? who.trim(),
    outcome: 'ok',
    detail: { wasOperator: rows.length > 0 },
  });
  return { account_id: account?.id ?? null, email: account?.email ?? who.trim(), revoked: rows.length > 0 };
}

/** Operators granted in the database (the CLI), oldest first. */
export async function listOperators(db: Db): Promise<Array<{ accountId: string; email: string; grantedBy: string; grantedAt: Date }>> {
  const { rows } = await db.query<{ account_id: string; email: string; granted_by: string; granted_at: Date | string }>(
    'SELECT g.account_id, u.email, g.granted_by, g.granted_at FROM gw_operator_grants g JOIN gw_users u ON u.id = g.account_id ORDER BY g.granted_at, g.account_id',
  );
  return rows.map((r) => ({ accountId: r.account_id, email: r.email, grantedBy: r.granted_by, grantedAt: new Date(r.granted_at) }));
}

/** True when the account is an operator by configuration (its id) or by a database grant. */
export async function isOperatorAccount(db: Db, configured: ReadonlySet<string>, accountId: string): Promise<boolean> {
  if (configured.has(accountId)) return true;
  const { rows } = await db.query('SELECT 1 FROM gw_operator_grants WHERE account_id = $1', [accountId]);
  return rows.length > 0;
}
