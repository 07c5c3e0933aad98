import { inputs } from '@farebox/contract';
import type { BudgetUse } from '@farebox/ledger';
import { displayText, toJsonInteger, toUsd } from '@farebox/protocol';
import {
  budgetFor,
  currentPeriod,
  parsePolicy,
  POLICY_COLUMNS,
  policyFromRow,
  policyParams,
  policyView,
  type PolicyRow,
  type SpendingPolicy,
} from '../auth/policy.js';
import type { Db } from '../db.js';
import { GatewayError } from '../errors.js';
import type { ConnectionView } from './types.js';

type Row = PolicyRow & {
  id: string;
  client_id: string;
  client_name: string;
  scopes: string;
  created_at: Date | string;
  last_used_at: Date | string | null;
};

const COLUMNS = `c.id, c.client_id, cl.client_name, c.scopes, c.created_at, c.last_used_at, ${POLICY_COLUMNS.replace(/(\w+)/g, 'c.$1')}`;

const blank = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');

/**
 * The spending policy of the consent page's form (`POST /authorize`): its
 * fields as `PATCH /v1/oauth/connections/:id` takes them, with the same
 * checks and messages (a `BAD_REQUEST` before anything is granted). An empty
 * field sets nothing; `allowed_services` is a list of names separated by
 * commas or spaces; `limit_period` is read only with a limit. A form of a page
 * from before the full policy (`daily_limit_usd`) sets a limit per day.
 */
export function consentPolicy(form: Record<string, unknown>): SpendingPolicy | undefined {
  const legacy = form.limit_usd === undefined && !blank(form.daily_limit_usd);
  const limit = legacy ? form.daily_limit_usd : form.limit_usd;
  const services = form.allowed_services;
  const body = {
    limit_usd: blank(limit) ? null : limit,
    limit_period: legacy ? 'day' : blank(limit) || blank(form.limit_period) ? null : form.limit_period,
    allowed_services: blank(services)
      ? null
      : typeof services === 'string'
        ? services.split(/[\s,]+/).filter(Boolean)
        : Array.isArray(services)
          ? services.flatMap((v) => (typeof v === 'string' ? v.split(/[\s,]+/).filter(Boolean) : [v]))
          : services,
    max_call_usd: blank(form.max_call_usd) ? null : form.max_call_usd,
  };
  const r = inputs.SpendingPolicyBody.safeParse(body);
  if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
  return parsePolicy(r.data);
}

/**
 * The connections' list and their spending policies (`GET` and `PATCH
 * /v1/oauth/connections`): each with its policy and its budget this period
 * (the ledger's). `daily_limit_*` and `spent_today_*` keep their meaning for
 * older readers: the limit when its period is a day, and what the
 * connection spent in the current UTC day when its period is a day.
 */
export function createConnectionPolicies(options: {
  db: Db;
  now: () => number;
  budgets?: (of: Array<{ credential: string; period: string }>) => Promise<Map<string, BudgetUse>>;
}) {
  const { db, now, budgets } = options;

  async function views(rows: Row[]): Promise<ConnectionView[]> {
    const at = now();
    const wanted = rows.flatMap((r) => budgetFor(r.id, policyFromRow(r), at) ?? []);
    const used = budgets && wanted.length > 0 ? await budgets(wanted) : new Map<string, BudgetUse>();
    return rows.map((r) => {
      const policy = policyFromRow(r);
      const b = budgetFor(r.id, policy, at);
      const use = b ? used.get(`${b.credential}\n${b.period}`) : undefined;
      const daily = policy?.period === 'day' ? policy.limit : null;
      const today = daily !== null && b?.period === currentPeriod('day', at).name ? (use?.spent ?? 0n) + (use?.held ?? 0n) : 0n;
      return {
        id: r.id,
        client_id: r.client_id,
        // As the consent page showed it: the app's name without control, format and bidi characters.
        client_name: displayText(r.client_name, 'Unnamed app'),
        scopes: r.scopes.split(' '),
        daily_limit_usd: daily === null ? null : toUsd(daily),
        daily_limit_base_units: daily === null ? null : toJsonInteger(daily),
        spent_today_usd: toUsd(today),
        spent_today_base_units: toJsonInteger(today),
        created_at: new Date(r.created_at).toISOString(),
        last_used_at: r.last_used_at ? new Date(r.last_used_at).toISOString() : null,
        ...policyView(policy, use, at),
      };
    });
  }

  const select = (where: string) =>
    `SELECT ${COLUMNS} FROM gw_oauth_connections c JOIN gw_oauth_clients cl ON cl.client_id = c.client_id WHERE ${where} ORDER BY c.created_at DESC, c.id`;

  return {
    async list(userId: string): Promise<ConnectionView[]> {
      const { rows } = await db.query<Row>(select('c.user_id = $1 AND c.revoked_at IS NULL'), [userId]);
      return views(rows);
    },

    /** Changes the connection's policy: its tokens' next call follows it (they read the connection on every use). */
    async update(userId: string, id: string, input: unknown): Promise<ConnectionView> {
      const r = inputs.SpendingPolicyBody.safeParse(input ?? {});
      if (!r.success) throw new GatewayError('BAD_REQUEST', r.error.issues[0]?.message ?? 'invalid input');
      const { rows } = await db.query<Row>(select('c.id = $1 AND c.user_id = $2 AND c.revoked_at IS NULL'), [id, userId]);
      if (!rows[0]) throw new GatewayError('NOT_FOUND', 'connection not found');
      const policy = parsePolicy(r.data, policyFromRow(rows[0]));
      const { rowCount } = await db.query(
        `UPDATE gw_oauth_connections SET limit_units = $3::bigint, limit_period = $4, allowed_services = $5::text[], max_call_units = $6::bigint
          WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL`,
        [id, userId, ...policyParams(policy)],
      );
      if (!rowCount) throw new GatewayError('NOT_FOUND', 'connection not found');
      const { rows: after } = await db.query<Row>(select('c.id = $1'), [id]);
      return (await views(after))[0]!;
    },
  };
}
