import type { Db } from '../db.js';

/** One line of the operator audit log. */
export interface AuditEntry {
  id: string;
  at: Date;
  /** Email of the operator, `funder:G...`, `policy:auto-refund`, `cli:<user>`, ... */
  actor: string;
  actorId: string | null;
  /** e.g. `dispute.resolve`, `operator.grant`, `settlement.retry`. */
  action: string;
  target: string | null;
  outcome: 'ok' | 'denied' | 'failed';
  detail: Record<string, unknown>;
}

export interface AuditInput {
  actor: string;
  actorId?: string | null;
  action: string;
  target?: string | null;
  outcome: AuditEntry['outcome'];
  detail?: Record<string, unknown>;
}

const json = (v: unknown) => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));

/** Writes an audit line (the table refuses UPDATE, DELETE and TRUNCATE). */
export async function writeAudit(db: Db, e: AuditInput): Promise<void> {
  await db.query('INSERT INTO gw_audit_log (actor, actor_id, action, target, outcome, detail) VALUES ($1, $2, $3, $4, $5, $6::jsonb)', [
    e.actor.slice(0, 320),
    e.actorId ?? null,
    e.action,
    e.target ?? null,
    e.outcome,
    json(e.detail ?? {}),
  ]);
}

/** The newest audit lines first. */
export async function listAudit(db: Db, limit: number): Promise<AuditEntry[]> {
  const { rows } = await db.query<{
    id: string | number;
    at: Date | string;
    actor: string;
    actor_id: string | null;
    action: string;
    target: string | null;
    outcome: AuditEntry['outcome'];
    detail: unknown;
  }>('SELECT id, at, actor, actor_id, action, target, outcome, detail FROM gw_audit_log ORDER BY id DESC LIMIT $1', [limit]);
  return rows.map((r) => ({
    id: String(r.id),
    at: new Date(r.at),
    actor: r.actor,
    actorId: r.actor_id,
    action: r.action,
    target: r.target,
    outcome: r.outcome,
    detail: (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail) as Record<string, unknown>,
  }));
}
