import type { inputs } from '@farebox/contract';
import type { Budget, BudgetUse } from '@farebox/ledger';
import { formatAmount, parseAmount, toUsd } from '@farebox/protocol';
import { GatewayError } from '../errors.js';

/**
 * Spending policies of credentials (API keys, OAuth connections): a limit
 * per period (UTC day, week from Monday, month, or the credential's whole
 * life), the services it may call, the highest price of one call. The
 * limit's in-flight budget is the ledger's (credential_budgets): each hold
 * made with the credential reserves against it in its own statement.
 */

export type LimitPeriod = 'day' | 'week' | 'month' | 'total';
export const LIMIT_PERIODS: readonly LimitPeriod[] = ['day', 'week', 'month', 'total'];

export interface SpendingPolicy {
  /** The limit per period, base units (null: none). */
  limit: bigint | null;
  /** The limit's period (null when there is no limit). */
  period: LimitPeriod | null;
  /** The services the credential may call (null: every service). */
  allowedServices: readonly string[] | null;
  /** The highest price of one call, base units (null: none). */
  maxCall: bigint | null;
}

/** The policy columns of gw_api_keys and gw_oauth_connections (gateway schema 8). */
export interface PolicyRow {
  limit_units: string | number | null;
  limit_period: string | null;
  allowed_services: string[] | string | null;
  max_call_units: string | number | null;
}

export const POLICY_COLUMNS = 'limit_units, limit_period, allowed_services, max_call_units';

/** A text[] column: pg gives an array, some drivers its literal `{a,b}` (service names need no quoting). */
const textArray = (v: string[] | string): string[] =>
  Array.isArray(v)
    ? v
    : v
        .replace(/^\{|\}$/g, '')
        .split(',')
        .filter(Boolean);

/** The policy of a row, or undefined when it sets nothing (such credentials take no extra step on a call). */
export function policyFromRow(r: PolicyRow): SpendingPolicy | undefined {
  if (r.limit_units === null && r.allowed_services === null && r.max_call_units === null) return undefined;
  return {
    limit: r.limit_units === null ? null : BigInt(r.limit_units),
    period: r.limit_units === null ? null : ((r.limit_period ?? 'day') as LimitPeriod),
    allowedServices: r.allowed_services === null ? null : textArray(r.allowed_services),
    maxCall: r.max_call_units === null ? null : BigInt(r.max_call_units),
  };
}

/** The row values of a policy ($n: limit_units, limit_period, allowed_services, max_call_units). */
export function policyParams(p: SpendingPolicy | undefined): [string | null, string | null, string[] | null, string | null] {
  return [
    p?.limit?.toString() ?? null,
    p?.limit === null || !p ? null : p.period,
    p?.allowedServices ? [...p.allowedServices] : null,
    p?.maxCall?.toString() ?? null,
  ];
}

const pad = (n: number) => String(n).padStart(2, '0');
const ymd = (d: Date) => `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;

/** The period `nowMs` falls in: its name in the ledger's budgets and when it ends (null for `total`). */
export function currentPeriod(period: LimitPeriod, nowMs: number): { name: string; resetsAt: Date | null } {
  const d = new Date(nowMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const day = Date.UTC(y, m, d.getUTCDate());
  switch (period) {
    case 'day':
      return { name: `day:${ymd(d)}`, resetsAt: new Date(day + 86_400_000) };
    case 'week': {
      const monday = day - ((d.getUTCDay() + 6) % 7) * 86_400_000;
      return { name: `week:${ymd(new Date(monday))}`, resetsAt: new Date(monday + 7 * 86_400_000) };
    }
    case 'month':
      return { name: `month:${y}-${pad(m + 1)}`, resetsAt: new Date(Date.UTC(y, m + 1, 1)) };
    default:
      return { name: 'total', resetsAt: null };
  }
}

// Every period starts at a UTC midnight, so its name changes only when the UTC day does:
// the name of each kind of period is kept for the day it was made on (a call's hold asks for it).
const periodNames = new Map<LimitPeriod, { day: number; name: string }>();
function periodName(period: LimitPeriod, nowMs: number): string {
  const day = Math.floor(nowMs / 86_400_000);
  const kept = periodNames.get(period);
  if (kept?.day === day) return kept.name;
  const name = currentPeriod(period, nowMs).name;
  periodNames.set(period, { day, name });
  return name;
}

/** The ledger budget a hold made with the credential counts against now, if its policy has a limit. */
export function budgetFor(credentialId: string, policy: SpendingPolicy | undefined, nowMs: number): Budget | undefined {
  if (!policy || policy.limit === null || policy.period === null) return undefined;
  return { credential: credentialId, period: periodName(policy.period, nowMs), limit: policy.limit };
}

/** The policy fields of a key, a connection or `/v1/me`: the policy and its budget this period. */
export interface PolicyView {
  limit_usd: number | null;
  limit_period: LimitPeriod | null;
  allowed_services: string[] | null;
  max_call_usd: number | null;
  /** Spent this period, calls in flight included (null without a limit). */
  spent_usd: number | null;
  remaining_usd: number | null;
  /** When the period ends (null without a limit, or for `total`). */
  resets_at: string | null;
}

export function policyView(policy: SpendingPolicy | undefined, use: BudgetUse | undefined, nowMs: number): PolicyView {
  const limited = policy && policy.limit !== null && policy.period !== null;
  const used = (use?.spent ?? 0n) + (use?.held ?? 0n);
  return {
    limit_usd: limited ? toUsd(policy.limit!) : null,
    limit_period: limited ? policy.period : null,
    allowed_services: policy?.allowedServices ? [...policy.allowedServices] : null,
    max_call_usd: policy?.maxCall ? toUsd(policy.maxCall) : null,
    spent_usd: limited ? toUsd(used) : null,
    remaining_usd: limited ? toUsd(policy.limit! > used ? policy.limit! - used : 0n) : null,
    resets_at: limited ? (currentPeriod(policy.period!, nowMs).resetsAt?.toISOString() ?? null) : null,
  };
}

const MAX_USD = parseAmount('10000');

function usdField(value: unknown, field: string): bigint | null {
  if (value === null) return null;
  let units: bigint;
  try {
    units = parseAmount(typeof value === 'number' ? String(value) : (value as string).trim().replace(/^\$/, ''));
  } catch {
    throw new GatewayError('BAD_REQUEST', `${field} must be a USD amount such as 5 or 2.50`);
  }
  if (units <= 0n || units > MAX_USD) throw new GatewayError('BAD_REQUEST', `${field} must be more than 0 and at most 10000 USD`);
  return units;
}

/**
 * The policy a create or update body asks for (the contract's
 * SpendingPolicyFields, already shape-checked): fields absent keep `base`'s,
 * null clears one. Undefined when the result sets nothing.
 */
export function parsePolicy(body: inputs.SpendingPolicyInput, base?: SpendingPolicy): SpendingPolicy | undefined {
  const limit = body.limit_usd === undefined ? (base?.limit ?? null) : usdField(body.limit_usd, 'limit_usd');
  let period = body.limit_period === undefined ? (base?.period ?? null) : body.limit_period;
  if (limit !== null && period === null) throw new GatewayError('BAD_REQUEST', 'limit_period required with limit_usd (day, week, month or total)');
  if (limit === null) period = null;
  const allowed = body.allowed_services === undefined ? (base?.allowedServices ?? null) : body.allowed_services;
  const maxCall = body.max_call_usd === undefined ? (base?.maxCall ?? null) : usdField(body.max_call_usd, 'max_call_usd');
  if (limit === null && allowed === null && maxCall === null) return undefined;
  return { limit, period, allowedServices: allowed === null ? null : [...new Set(allowed)], maxCall };
}

/** `key` or `connection`: whose policy refused a call. */
export type LimitSource = 'key' | 'connection';
const noun = (source: LimitSource) => (source === 'key' ? 'this API key' : 'this connection');
const usd = (units: bigint) => `$${formatAmount(units, { trim: true })}`;
const PER: Record<LimitPeriod, string> = { day: 'per day (UTC)', week: 'per week (UTC, from Monday)', month: 'per month (UTC)', total: 'in total' };

/** The machine-readable fields of a refusal (docs/api.md, "Spending policies"). */
function refusalFields(source: LimitSource, policy: SpendingPolicy, use: BudgetUse | undefined, nowMs: number) {
  const view = policyView(policy, use, nowMs);
  return { limit_source: source, limit_usd: view.limit_usd, remaining_usd: view.remaining_usd, resets_at: view.resets_at };
}

/**
 * Checks a call against the policy before anything moves: the service must
 * be allowed and the price within the per-call maximum (403 otherwise).
 * `use` reads the budget for the refusal's fields.
 */
export async function checkCall(
  source: LimitSource,
  policy: SpendingPolicy,
  service: string,
  amount: bigint,
  nowMs: number,
  use: () => Promise<BudgetUse | undefined>,
): Promise<void> {
  if (policy.allowedServices && !policy.allowedServices.includes(service)) {
    throw new GatewayError('FORBIDDEN', `${noun(source)} may not call ${service} (allowed: ${policy.allowedServices.join(', ') || 'none'})`, {
      ...refusalFields(source, policy, await use(), nowMs),
      allowed_services: [...policy.allowedServices],
    });
  }
  if (policy.maxCall !== null && amount > policy.maxCall) {
    throw new GatewayError('FORBIDDEN', `this call costs ${usd(amount)}, over the maximum per call of ${noun(source)} (${usd(policy.maxCall)})`, {
      ...refusalFields(source, policy, await use(), nowMs),
      max_call_usd: toUsd(policy.maxCall),
    });
  }
}

/** The 402 of a call the budget does not cover (the ledger's BUDGET_EXCEEDED data: spent, held). */
export function budgetExceeded(
  source: LimitSource,
  policy: SpendingPolicy,
  data: Record<string, unknown> | undefined,
  amount: bigint,
  nowMs: number,
): GatewayError {
  const use = { spent: BigInt(String(data?.spent ?? '0')), held: BigInt(String(data?.held ?? '0')) };
  const fields = refusalFields(source, policy, use, nowMs);
  const left = policy.limit! > use.spent + use.held ? policy.limit! - use.spent - use.held : 0n;
  const until = fields.resets_at ? ` until ${fields.resets_at}` : '';
  return new GatewayError(
    'SPENDING_LIMIT',
    `spending limit reached: ${noun(source)} may spend ${usd(policy.limit!)} ${PER[policy.period!]}; ${usd(left)} is left${until} and this call costs ${usd(amount)}`,
    fields,
  );
}
