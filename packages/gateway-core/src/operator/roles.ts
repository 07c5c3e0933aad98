import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import { writeAudit } from './audit.js';

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The form emails are compared in (the accounts table's `email_normalized`). */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

/** Emails of `FAREBOX_OPERATORS` (comma or space separated); every malformed entry is reported. */
export function parseOperatorList(value: string | undefined): { emails: Set<string>; problems: string[] } {
  const emails = new Set<string>();
  const problems: string[] = [];
  for (const raw of (value ?? '').split(/[\s,;]+/)) {
    if (!raw) continue;
    const e = normalizeEmail(raw);
    if (!EMAIL.test(e)) problems.push(`FAREBOX_OPERATORS: "${raw}" is not an email address`);
    else emails.add(e);
  }
  return { emails, problems };
}

/**
 * Grants the operator role to an email (an account may be created later).
 * Only the CLI calls this, with direct database access; the public API has
 * no way to grant it. Audited as `operator.grant`.
 */
export async function grantOperator(db: Db, email: string, grantedBy: string): Promise<{ email: string; granted: boolean }> {
  const e = normalizeEmail(email);
  if (!EMAIL.test(e)) throw new GatewayError('BAD_REQUEST', `"${email}" is not an email address`);
  const { rows } = await db.query('INSERT INTO gw_operators (email_normalized, granted_by) VALUES ($1, $2) ON CONFLICT (email_normalized) DO NOTHING RETURNING email_normalized', [e, grantedBy]);
  await writeAudit(db, { actor: grantedBy, action: 'operator.grant', target: e, outcome: 'ok', detail: { alreadyOperator: rows.length === 0 } });
  return { email: e, granted: rows.length > 0 };
}

/** Takes the role back (CLI only). Audited as `operator.revoke`. */
export async function revokeOperator(db: Db, email: string, revokedBy: string): Promise<{ email: string; revoked: boolean }> {
  const e = normalizeEmail(email);
  const { rows } = await db.query('DELETE FROM gw_operators WHERE email_normalized = $1 RETURNING email_normalized', [e]);
  await writeAudit(db, { actor: revokedBy, action: 'operator.revoke', target: e, outcome: 'ok', detail: { wasOperator: rows.length > 0 } });
  return { email: e, revoked: rows.length > 0 };
}

/** Operators granted in the database (the CLI), oldest first. */
export async function listOperators(db: Db): Promise<Array<{ email: string; grantedBy: string; grantedAt: Date }>> {
  const { rows } = await db.query<{ email_normalized: string; granted_by: string; granted_at: Date | string }>('SELECT email_normalized, granted_by, granted_at FROM gw_operators ORDER BY granted_at, email_normalized');
  return rows.map((r) => ({ email: r.email_normalized, grantedBy: r.granted_by, grantedAt: new Date(r.granted_at) }));
}

/** True when the email is an operator by configuration or by a database grant. */
export async function isOperatorEmail(db: Db, configured: ReadonlySet<string>, email: string): Promise<boolean> {
  const e = normalizeEmail(email);
  if (configured.has(e)) return true;
  const { rows } = await db.query('SELECT 1 FROM gw_operators WHERE email_normalized = $1', [e]);
  return rows.length > 0;
}
