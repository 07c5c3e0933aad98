import { randomBytes } from 'node:crypto';
import { formatAmount, parseAmount, toUsd } from '@farebox/protocol';
import type { Principal } from '../auth/accounts.js';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import type { ConnectionView, OAuthConnections } from './types.js';

/**
 * Paid calls the user confirms (docs/oauth.md, "Calls the user confirms").
 * Each OAuth connection has a threshold: a `call_agent` priced above
 * `above` (default 0.10 USD), or one that would leave less than
 * `belowLeftPct` percent (default 10) of the connection's spending limit,
 * is confirmed by the user before anything is held: through MCP elicitation
 * (an `elicitation` approval, answered in the retried request), or on the
 * dashboard's `/approve/<id>` (a `link` approval, named by the retry's
 * `approval_id`). An approval is bound to the connection, the service and
 * the price the user saw, single use, and expires after `ttlMs`.
 */

export interface ConfirmationSettings {
  /** Base units; a call priced above asks first (0n: every paid call; null: never by price). */
  above: bigint | null;
  /** A call that would leave less than this percent of the limit asks first (0: never). */
  belowLeftPct: number;
  /** The owner lets the app confirm for them (MCP form-mode elicitation); else the person confirms on the gateway's page. */
  appConfirms: boolean;
}

export const DEFAULT_CONFIRMATION: ConfirmationSettings = { above: parseAmount('0.10'), belowLeftPct: 10, appConfirms: false };
/** How long an approval waits for the user (and, approved, for the retry). */
export const APPROVAL_TTL_MS = 10 * 60_000;

/** The spending limit of a connection and what is left of it this period (auth/policy.ts). */
export interface ConnectionBudget {
  limit: bigint;
  remaining: bigint;
  period: string;
}

const PERIOD_NAMES: Record<string, string> = { day: 'per UTC day', week: 'per week', month: 'per month', total: 'in total' };

/** A credential's policy view (`spendingPolicy`, auth/policy.ts) as the budget a confirmation counts with: null without a limit. */
export function budgetOfView(view: { limit_usd: number | null; remaining_usd: number | null; limit_period: string | null } | null): ConnectionBudget | null {
  if (!view || view.limit_usd === null || view.remaining_usd === null) return null;
  return { limit: parseAmount(view.limit_usd), remaining: parseAmount(view.remaining_usd), period: PERIOD_NAMES[view.limit_period ?? ''] ?? 'per period' };
}

export interface ConfirmationView {
  connection_id: string;
  confirm_above_usd: number | null;
  confirm_below_left_percent: number;
  confirm_by_app: boolean;
}

export interface ApprovalView {
  id: string;
  connection_id: string;
  client_name: string;
  service: string;
  price_usd: number;
  price_base_units: string;
  status: 'pending' | 'approved' | 'denied' | 'used' | 'expired';
  expires_at: string;
}

/** What a call needs: nothing (with the highest price it may reach unconfirmed), or the user's confirmation. */
export type ConfirmationCheck = { needed: false; ceiling?: bigint } | { needed: true; price: bigint; budget: ConnectionBudget | null };

type ApprovalRow = {
  id: string;
  kind: 'elicitation' | 'link';
  connection_id: string;
  user_id: string;
  service: string;
  max_units: string;
  status: 'pending' | 'approved' | 'denied' | 'used';
  expires_ms: string;
  client_name?: string;
};

const usd = (units: bigint) => `$${formatAmount(units, { trim: true })}`;

/** What a gated call may charge (`ceiling`), and what gives its approval back when it fails. */
export interface CallGate {
  ceiling?: bigint;
  failed?: () => Promise<boolean>;
}

/** The sentence on what is left of the limit, in a confirmation's messages. */
export const budgetLeft = (budget: ConnectionBudget | null): string =>
  budget ? ` This app has ${usd(budget.remaining)} left of its ${usd(budget.limit)} limit (${budget.period}).` : '';

/** The machine-readable fields of a `CONFIRMATION_REQUIRED` refusal (REST body, MCP tool error). */
export function confirmationFields(
  approval: { id: string; url: string; expiresAt: string },
  service: string,
  check: { price: bigint; budget: ConnectionBudget | null },
): Record<string, unknown> {
  return {
    code: 'CONFIRMATION_REQUIRED',
    approval_id: approval.id,
    approval_url: approval.url,
    expires_at: approval.expiresAt,
    service,
    price_usd: toUsd(check.price),
    ...(check.budget ? { remaining_usd: toUsd(check.budget.remaining) } : {}),
  };
}
const isOAuth = (p: Principal) => p.via === 'oauth';

/** The settings a body asks for (`confirm_above_usd`: USD or null; `confirm_below_left_percent`: 0 to 100); absent fields keep `base`'s. */
export function parseConfirmationSettings(body: unknown, base: ConfirmationSettings = DEFAULT_CONFIRMATION): ConfirmationSettings {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new GatewayError('BAD_REQUEST', 'send a JSON object');
  const b = body as Record<string, unknown>;
  let above = base.above;
  if (b.confirm_above_usd !== undefined) {
    const v = b.confirm_above_usd;
    if (v === null || v === '') above = null;
    else {
      try {
        above = parseAmount(typeof v === 'number' ? String(v) : typeof v === 'string' ? v.trim().replace(/^\$/, '') : Number.NaN);
      } catch {
        throw new GatewayError('BAD_REQUEST', 'confirm_above_usd must be a USD amount such as 0.10, or empty for no threshold');
      }
      if (above < 0n || above > parseAmount('10000')) throw new GatewayError('BAD_REQUEST', 'confirm_above_usd must be between 0 and 10000 USD');
    }
  }
  let pct = base.belowLeftPct;
  if (b.confirm_below_left_percent !== undefined) {
    const v = typeof b.confirm_below_left_percent === 'string' ? Number(b.confirm_below_left_percent) : b.confirm_below_left_percent;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 100) {
      throw new GatewayError('BAD_REQUEST', 'confirm_below_left_percent must be a whole number from 0 to 100');
    }
    pct = v;
  }
  let appConfirms = base.appConfirms;
  if (b.confirm_by_app !== undefined) {
    const v = b.confirm_by_app;
    // A form's checkbox sends `on`; JSON sends a boolean.
    if (v === true || v === 'on' || v === 'true') appConfirms = true;
    else if (v === false || v === 'false' || v === '') appConfirms = false;
    else throw new GatewayError('BAD_REQUEST', 'confirm_by_app must be true or false');
  }
  return { above, belowLeftPct: pct, appConfirms };
}

const settingsView = (connectionId: string, s: ConfirmationSettings): ConfirmationView => ({
  connection_id: connectionId,
  confirm_above_usd: s.above === null ? null : toUsd(s.above),
  confirm_below_left_percent: s.belowLeftPct,
  confirm_by_app: s.appConfirms,
});

type SettingsRow = { above_units: string | null; below_left_pct: number | null; app_confirms: boolean | null };
const settingsOf = (r: SettingsRow): ConfirmationSettings => ({
  above: r.above_units === null ? null : BigInt(r.above_units),
  belowLeftPct: Number(r.below_left_pct),
  appConfirms: r.app_confirms === true,
});

export function createCallConfirmations(options: {
  db: Db;
  now: () => number;
  /** The price per call of a service (undefined: unknown, the call itself answers it). */
  price(service: string): Promise<bigint | undefined>;
  /** The connection's spending limit and what is left of it now (null without a limit). */
  budget(principal: Principal): Promise<ConnectionBudget | null>;
  /** The gateway's public address: the dashboard's approval page is `${origin}/approve/<id>`. */
  origin: string;
  ttlMs?: number;
}) {
  const { db, now } = options;
  const ttlMs = options.ttlMs ?? APPROVAL_TTL_MS;

  async function settings(connectionId: string): Promise<ConfirmationSettings> {
    const { rows } = await db.query<SettingsRow>('SELECT above_units, below_left_pct, app_confirms FROM gw_oauth_call_confirmations WHERE connection_id = $1', [
      connectionId,
    ]);
    return rows[0] ? settingsOf(rows[0]) : DEFAULT_CONFIRMATION;
  }

  async function save(connectionId: string, s: ConfirmationSettings): Promise<void> {
    await db.query(
      `INSERT INTO gw_oauth_call_confirmations (connection_id, above_units, below_left_pct, app_confirms) VALUES ($1, $2::bigint, $3, $4)
       ON CONFLICT (connection_id) DO UPDATE SET above_units = EXCLUDED.above_units, below_left_pct = EXCLUDED.below_left_pct,
         app_confirms = EXCLUDED.app_confirms, updated_at = now()`,
      [connectionId, s.above?.toString() ?? null, s.belowLeftPct, s.appConfirms],
    );
  }

  async function liveConnection(userId: string, connectionId: string): Promise<void> {
    const { rows } = await db.query('SELECT 1 FROM gw_oauth_connections WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL', [connectionId, userId]);
    if (!rows[0]) throw new GatewayError('NOT_FOUND', 'connection not found');
  }

  const approvalUrl = (id: string) => `${options.origin}/approve/${id}`;

  async function row(id: string): Promise<ApprovalRow | undefined> {
    const { rows } = await db.query<ApprovalRow>(
      `SELECT a.id, a.kind, a.connection_id, a.user_id, a.service, a.max_units, a.status, a.expires_ms, cl.client_name
         FROM gw_call_approvals a JOIN gw_oauth_connections c ON c.id = a.connection_id JOIN gw_oauth_clients cl ON cl.client_id = c.client_id
        WHERE a.id = $1`,
      [id],
    );
    return rows[0];
  }

  const expired = (r: ApprovalRow, at: number) => Number(r.expires_ms) <= at;

  function approvalView(r: ApprovalRow, at: number): ApprovalView {
    const units = BigInt(r.max_units);
    return {
      id: r.id,
      connection_id: r.connection_id,
      client_name: r.client_name ?? '',
      service: r.service,
      price_usd: toUsd(units),
      price_base_units: units.toString(),
      status: (r.status === 'pending' || r.status === 'approved') && expired(r, at) ? 'expired' : r.status,
      expires_at: new Date(Number(r.expires_ms)).toISOString(),
    };
  }

  /**
   * Marks an approval of this connection and service used (single use) and
   * answers the highest price the user confirmed. `from` is the status it
   * must be in: `pending` for an elicitation the user just accepted,
   * `approved` for a link approved on the dashboard.
   */
  async function use(principal: Principal, id: string, service: string, kind: ApprovalRow['kind'], from: ApprovalRow['status']): Promise<bigint> {
    const at = now();
    const r = await row(id);
    if (!r || r.connection_id !== principal.credentialId || r.kind !== kind) {
      throw new GatewayError('NOT_FOUND', `unknown approval_id ${JSON.stringify(id)}: call again without it to get a new approval link`);
    }
    if (r.service !== service) throw new GatewayError('FORBIDDEN', `approval ${id} is for the service ${r.service}, not ${service}`);
    if (r.status === 'used')
      throw new GatewayError('CONFLICT', `approval ${id} was already used: an approval pays for one call; call again without approval_id`);
    if (r.status === 'denied') throw new GatewayError('FORBIDDEN', `the call was denied (approval ${id}): nothing was charged`);
    if (expired(r, at)) {
      throw new GatewayError(
        'FORBIDDEN',
        `approval ${id} expired at ${new Date(Number(r.expires_ms)).toISOString()}: call again without approval_id for a new one`,
      );
    }
    if (r.status !== from) {
      throw new GatewayError('FORBIDDEN', `approval ${id} is not approved yet: open ${approvalUrl(id)}, approve the call, then call again with approval_id`);
    }
    const max = BigInt(r.max_units);
    const price = await options.price(service);
    if (price !== undefined && price > max) {
      throw new GatewayError('FORBIDDEN', `the price of ${service} is now ${usd(price)}, above the ${usd(max)} that was confirmed: nothing was charged`);
    }
    const { rowCount } = await db.query(`UPDATE gw_call_approvals SET status = 'used', used_ms = $3 WHERE id = $1 AND status = $2 AND expires_ms > $3`, [
      id,
      from,
      at,
    ]);
    if (!rowCount) throw new GatewayError('CONFLICT', `approval ${id} was already used: an approval pays for one call; call again without approval_id`);
    return max;
  }

  return {
    approvalUrl,
    /** The settings a form or body asks for (parseConfirmationSettings). */
    parseSettings: parseConfirmationSettings,

    /** Whether a call of `service` by this OAuth principal needs the user's confirmation now. */
    async check(principal: Principal, service: string): Promise<ConfirmationCheck> {
      if (!isOAuth(principal)) return { needed: false };
      const price = await options.price(service);
      if (price === undefined || price === 0n) return { needed: false };
      // A call the connection's policy refuses anyway (service, price) is refused without asking.
      const p = principal.policy;
      if (p && ((p.allowedServices && !p.allowedServices.includes(service)) || (p.maxCall !== null && price > p.maxCall))) return { needed: false };
      const s = await settings(principal.credentialId);
      const budget = s.belowLeftPct > 0 || s.above !== null ? await options.budget(principal) : null;
      // A call the limit refuses anyway is refused without asking.
      if (budget && price > budget.remaining) return { needed: false };
      // What must stay of the limit: ceil(limit * pct / 100).
      const keep = budget && s.belowLeftPct > 0 ? (budget.limit * BigInt(s.belowLeftPct) + 99n) / 100n : undefined;
      const byPrice = s.above !== null && price > s.above;
      const byLimit = budget !== null && keep !== undefined && budget.remaining - price < keep;
      if (byPrice || byLimit) return { needed: true, price, budget };
      const ceilings = [...(s.above !== null ? [s.above] : []), ...(budget && keep !== undefined ? [budget.remaining - keep] : [])];
      return ceilings.length ? { needed: false, ceiling: ceilings.reduce((a, b) => (a < b ? a : b)) } : { needed: false };
    },

    /**
     * The confirmation of a call on any door but `/mcp`'s own flow (`POST
     * /v1/call`, the wallet path behind it): with `approvalId` (the
     * `Farebox-Approval` header), the approval the person gave on the
     * gateway's page is used; else a call that needs confirming is refused
     * with `403 CONFIRMATION_REQUIRED` and the link, nothing held. Answers
     * the highest price the call may charge, and what gives the approval
     * back when the service fails (refunded).
     */
    async gate(principal: Principal, service: string, approvalId: string | undefined): Promise<CallGate> {
      if (approvalId !== undefined) {
        const max = await use(principal, approvalId, service, 'link', 'approved');
        return { ceiling: max, failed: () => this.reopen(principal, approvalId) };
      }
      const check = await this.check(principal, service);
      if (!check.needed) return check.ceiling === undefined ? {} : { ceiling: check.ceiling };
      const approval = await this.open(principal, 'link', service, check.price);
      throw new GatewayError(
        'FORBIDDEN',
        `this call to ${service} costs ${usd(check.price)} and needs the user's approval: ask them to open ${approval.url} and approve it ` +
          `(before ${approval.expiresAt}), then send the call again with the header Farebox-Approval: ${approval.id}. Nothing was charged.${budgetLeft(check.budget)}`,
        confirmationFields(approval, service, check),
      );
    },

    /** A new approval of one call (pending), bound to the principal's connection, `service` and `price`. */
    async open(principal: Principal, kind: ApprovalRow['kind'], service: string, price: bigint): Promise<{ id: string; url: string; expiresAt: string }> {
      const id = `apr_${randomBytes(18).toString('base64url')}`;
      const at = now();
      await db.query(
        `INSERT INTO gw_call_approvals (id, kind, connection_id, user_id, service, max_units, created_ms, expires_ms) VALUES ($1, $2, $3, $4, $5, $6::bigint, $7, $8)`,
        [id, kind, principal.credentialId, principal.user.id, service, price.toString(), at, at + ttlMs],
      );
      return { id, url: approvalUrl(id), expiresAt: new Date(at + ttlMs).toISOString() };
    },

    /** An elicitation the user accepted: its approval is used; the highest price confirmed. */
    useElicited: (principal: Principal, id: string, service: string) => use(principal, id, service, 'elicitation', 'pending'),
    /** A retry naming a link approved on the dashboard: its approval is used; the highest price approved. */
    useApproved: (principal: Principal, id: string, service: string) => use(principal, id, service, 'link', 'approved'),

    /**
     * A confirmed call that failed and was refunded: its approval pays for one
     * retry (once; within its expiry). It becomes an approved `link` approval,
     * so the retry names it with `approval_id` (also after an elicitation).
     * True when it was given back.
     */
    async reopen(principal: Principal, id: string): Promise<boolean> {
      const { rowCount } = await db.query(
        `UPDATE gw_call_approvals SET status = 'approved', kind = 'link', reopened_ms = $3
          WHERE id = $1 AND connection_id = $2 AND status = 'used' AND reopened_ms IS NULL AND expires_ms > $3`,
        [id, principal.credentialId, now()],
      );
      return Boolean(rowCount);
    },

    /** An elicitation the user declined or cancelled: its approval can no longer be used. */
    async refuse(principal: Principal, id: string): Promise<void> {
      await db.query(`UPDATE gw_call_approvals SET status = 'denied', decided_ms = $3 WHERE id = $1 AND connection_id = $2 AND status = 'pending'`, [
        id,
        principal.credentialId,
        now(),
      ]);
    },

    /** The approval page's view of an approval of the user's (404 for anyone else's). */
    async approval(userId: string, id: string): Promise<ApprovalView> {
      const r = await row(id);
      if (!r || r.user_id !== userId || r.kind !== 'link') throw new GatewayError('NOT_FOUND', 'approval not found');
      return approvalView(r, now());
    },

    /** The user's answer on the approval page: `approve` or `deny`, once, before it expires. */
    async decide(userId: string, id: string, decision: unknown): Promise<ApprovalView> {
      if (decision !== 'approve' && decision !== 'deny') throw new GatewayError('BAD_REQUEST', 'decision must be approve or deny');
      const at = now();
      const r = await row(id);
      if (!r || r.user_id !== userId || r.kind !== 'link') throw new GatewayError('NOT_FOUND', 'approval not found');
      if (expired(r, at) && r.status === 'pending')
        throw new GatewayError('CONFLICT', `this approval expired at ${new Date(Number(r.expires_ms)).toISOString()}`);
      const { rowCount } = await db.query(
        `UPDATE gw_call_approvals a SET status = $2, decided_ms = $3
           FROM gw_oauth_connections c
          WHERE a.id = $1 AND a.status = 'pending' AND a.expires_ms > $3 AND c.id = a.connection_id AND c.revoked_at IS NULL`,
        [id, decision === 'approve' ? 'approved' : 'denied', at],
      );
      if (!rowCount) throw new GatewayError('CONFLICT', `this approval was already ${r.status === 'pending' ? 'closed' : r.status}`);
      return approvalView({ ...r, status: decision === 'approve' ? 'approved' : 'denied' }, at);
    },

    /** The thresholds of the user's live connections (defaults where none was set). */
    async list(userId: string): Promise<ConfirmationView[]> {
      const { rows } = await db.query<SettingsRow & { id: string; has: boolean }>(
        `SELECT c.id, f.above_units, f.below_left_pct, f.app_confirms, f.connection_id IS NOT NULL AS has
           FROM gw_oauth_connections c LEFT JOIN gw_oauth_call_confirmations f ON f.connection_id = c.id
          WHERE c.user_id = $1 AND c.revoked_at IS NULL ORDER BY c.created_at DESC, c.id`,
        [userId],
      );
      return rows.map((r) => settingsView(r.id, r.has ? settingsOf(r) : DEFAULT_CONFIRMATION));
    },

    /** Whether the owner lets the app confirm this connection's calls (form-mode elicitation). */
    appConfirms: async (principal: Principal): Promise<boolean> => (await settings(principal.credentialId)).appConfirms,

    /** The threshold of one connection (defaults where none was set). */
    async get(connectionId: string): Promise<ConfirmationView> {
      return settingsView(connectionId, await settings(connectionId));
    },

    /** Changes a connection's threshold (the dashboard's connections); its next call follows it. */
    async update(userId: string, connectionId: string, body: unknown): Promise<ConfirmationView> {
      await liveConnection(userId, connectionId);
      const s = parseConfirmationSettings(body, await settings(connectionId));
      await save(connectionId, s);
      return settingsView(connectionId, s);
    },

    /** The threshold set on the consent page, for the user's live connection to `clientId`. */
    async setForClient(userId: string, clientId: string, s: ConfirmationSettings): Promise<void> {
      const { rows } = await db.query<{ id: string }>('SELECT id FROM gw_oauth_connections WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL', [
        userId,
        clientId,
      ]);
      if (rows[0]) await save(rows[0].id, s);
    },

    /** The threshold of the user's live connection to `clientId` (the consent page's field), defaults without one. */
    async forClient(userId: string, clientId: string): Promise<ConfirmationSettings> {
      const { rows } = await db.query<{ id: string }>('SELECT id FROM gw_oauth_connections WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL', [
        userId,
        clientId,
      ]);
      return rows[0] ? settings(rows[0].id) : DEFAULT_CONFIRMATION;
    },
  };
}

export type CallConfirmations = ReturnType<typeof createCallConfirmations>;

/** A connection as `/v1/oauth/connections` answers it: its spending policy and its confirmation threshold. */
export type ConnectionWithThreshold = ConnectionView & Omit<ConfirmationView, 'connection_id'>;

export interface ConnectionsWithThresholds {
  list(userId: string): Promise<ConnectionWithThreshold[]>;
  /** The contract's UpdateOAuthConnectionBody: spending policy fields and threshold fields, all checked before anything changes. */
  update(userId: string, id: string, input: unknown): Promise<ConnectionWithThreshold>;
  revoke(userId: string, id: string): Promise<{ id: string; revoked: true }>;
}

const THRESHOLD_FIELDS = ['confirm_above_usd', 'confirm_below_left_percent', 'confirm_by_app'] as const;
const threshold = ({ confirm_above_usd, confirm_below_left_percent, confirm_by_app }: ConfirmationView) => ({
  confirm_above_usd,
  confirm_below_left_percent,
  confirm_by_app,
});

/**
 * The OAuth connections' list and update with the thresholds: `PATCH
 * /v1/oauth/connections/:id` takes `confirm_above_usd` and
 * `confirm_below_left_percent` next to the spending policy. Bad threshold
 * input is refused before the policy is touched, bad policy input before the
 * threshold is.
 */
export function withThresholds(connections: OAuthConnections, confirmations: CallConfirmations): ConnectionsWithThresholds {
  return {
    async list(userId) {
      const [list, thresholds] = await Promise.all([connections.list(userId), confirmations.list(userId)]);
      const byId = new Map(thresholds.map((t) => [t.connection_id, t]));
      return list.map((c) => ({ ...c, ...threshold(byId.get(c.id) ?? settingsView(c.id, DEFAULT_CONFIRMATION)) }));
    },
    async update(userId, id, input) {
      const body = input ?? {};
      if (typeof body !== 'object' || Array.isArray(body)) return { ...(await connections.update(userId, id, body)), ...DEFAULT_VIEW };
      const rest: Record<string, unknown> = { ...body };
      const wanted: Record<string, unknown> = {};
      for (const f of THRESHOLD_FIELDS) {
        if (f in rest) wanted[f] = rest[f];
        delete rest[f];
      }
      const changes = Object.keys(wanted).length > 0;
      if (changes) parseConfirmationSettings(wanted);
      const view = await connections.update(userId, id, rest);
      return { ...view, ...threshold(changes ? await confirmations.update(userId, id, wanted) : await confirmations.get(id)) };
    },
    revoke: (userId, id) => connections.revoke(userId, id),
  };
}

const DEFAULT_VIEW = threshold(settingsView('', DEFAULT_CONFIRMATION));
