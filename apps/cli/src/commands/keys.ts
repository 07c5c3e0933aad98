import type { GatewayApiKey, GatewayCreatedApiKey, GatewaySpendingPolicyInput } from '@farebox/client';
import type { Command } from 'commander';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { table } from '../format.js';
import { gatewayCall, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox keys list | create | revoke`: API keys.

export async function runKeysList(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const keys = await gatewayCall(() => gw.apiKeys.list());
  return result(
    keys,
    table(
      keys.map((k) => ({
        id: k.id,
        name: k.name,
        prefix: k.prefix,
        kind: k.kind,
        created: k.created_at,
        'last used': typeof k.last_used_at === 'string' ? k.last_used_at : '',
        policy: policyText(k),
      })),
      ['id', 'name', 'prefix', 'kind', 'created', 'last used', 'policy'],
    ),
  );
}

/** The options of `keys create` and `keys set` that make a spending policy. */
export interface PolicyOptions {
  limit?: string;
  allow?: string;
  maxCall?: string;
}

const PERIODS = ['day', 'week', 'month', 'total'];

/** `--limit 5/day --allow echo,word-count --max-call 0.05` as the API's policy fields; `none` removes one. */
export function policyFromOptions(o: PolicyOptions): GatewaySpendingPolicyInput {
  const policy: GatewaySpendingPolicyInput = {};
  if (o.limit !== undefined) {
    if (o.limit === 'none') policy.limit_usd = null;
    else {
      const m = /^\$?([0-9.]+)\/(\w+)$/.exec(o.limit.trim());
      if (!m || !PERIODS.includes(m[2]!)) throw new CliError('USAGE', '--limit must look like 5/day (periods: day, week, month, total), or none');
      policy.limit_usd = m[1]!;
      policy.limit_period = m[2] as 'day';
    }
  }
  if (o.allow !== undefined)
    policy.allowed_services =
      o.allow === 'all'
        ? null
        : o.allow
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean);
  if (o.maxCall !== undefined) policy.max_call_usd = o.maxCall === 'none' ? null : o.maxCall.replace(/^\$/, '');
  return policy;
}

/** One line of a key's policy: `$1.2 of $5/day left (resets 2026-11-27T00:00:00.000Z); only echo, word-count; max $0.05 a call`. */
export function policyText(k: GatewayApiKey | GatewayCreatedApiKey): string {
  const parts: string[] = [];
  if (k.limit_usd !== null && k.limit_usd !== undefined) {
    parts.push(`$${k.remaining_usd ?? k.limit_usd} of $${k.limit_usd}/${k.limit_period} left${k.resets_at ? ` (resets ${k.resets_at})` : ''}`);
  }
  if (k.allowed_services) parts.push(`only ${k.allowed_services.join(', ') || 'no service'}`);
  if (k.max_call_usd !== null && k.max_call_usd !== undefined) parts.push(`max $${k.max_call_usd} a call`);
  return parts.join('; ');
}

/** What each kind of key may do, in the CLI's words. */
const KIND_TEXT = {
  spend: 'a spend key: it may call, search and read its own balance, transactions and policy',
  manage: 'a manage key: it may also manage keys, connections, top-ups and publishing',
} as const;

export async function runKeysCreate(ctx: Context, name: string, options: PolicyOptions & { spendOnly?: boolean } = {}): Promise<CommandResult> {
  const policy = policyFromOptions(options);
  const gw = await ctx.gateway();
  const k = await gatewayCall(() => gw.apiKeys.create(name, { ...policy, ...(options.spendOnly ? { kind: 'spend' as const } : {}) }));
  const limits = policyText(k);
  return result(
    k,
    `${k.key}\n\nCreated API key "${k.name}" (${k.id}), ${KIND_TEXT[k.kind]}${limits ? `; spending policy: ${limits}` : ''}. This is the only time the key is shown: store it now.`,
  );
}

export async function runKeysSet(ctx: Context, id: string, options: PolicyOptions & { name?: string }): Promise<CommandResult> {
  const changes = { ...policyFromOptions(options), ...(options.name !== undefined ? { name: options.name } : {}) };
  const gw = await ctx.gateway();
  const k = await gatewayCall(() => gw.apiKeys.update(id, changes));
  return result(k, `Updated API key "${k.name}" (${k.id}): ${policyText(k) || 'no spending policy'}.`);
}

export async function runKeysRevoke(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.apiKeys.revoke(id));
  return result(r, `Revoked API key ${id}.`);
}

export const keyCommands: CommandGroup = {
  name: 'keys',
  register(program, { act }) {
    const keys = program.command('keys').description('API keys');
    keys
      .command('list', { isDefault: true })
      .description('live keys')
      .action(() => act((ctx) => runKeysList(ctx))());
    const policyOptions = (c: Command) =>
      c
        .option('--limit <amount/period>', 'spending limit, e.g. 5/day (day, week, month in UTC, or total); none removes it')
        .option('--allow <services>', 'the only services it may call, comma-separated (all: every service)')
        .option('--max-call <usd>', 'the highest price of one call in USD; none removes it');
    policyOptions(
      keys
        .command('create <name>')
        .description('create a key (shown once), optionally with a spending policy (a key with one is a spend key)')
        .option('--spend-only', 'a spend key: it may call, search and read its own balance, transactions and policy, never manage keys or money'),
    ).action((name: string, o: PolicyOptions & { spendOnly?: boolean }) => act((ctx) => runKeysCreate(ctx, name, o))());
    policyOptions(keys.command('set <id>').description("change a key's name or spending policy (its next call follows it)"))
      .option('--name <name>', 'a new name')
      .action((id: string, o: PolicyOptions & { name?: string }) => act((ctx) => runKeysSet(ctx, id, o))());
    keys
      .command('revoke <id>')
      .description('revoke a key')
      .action((id: string) => act((ctx) => runKeysRevoke(ctx, id))());
  },
};
