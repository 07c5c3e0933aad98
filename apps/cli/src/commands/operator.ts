import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { createClient, type GatewayClient, type DisputeDecision } from '@farebox/client';
import { parseAmount } from '@farebox/protocol';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { pairs, table } from '../format.js';
import { gatewayCall, readKeypair, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox dispute` and `farebox operator ...`: disputes, treasury, settlements, revenue, audit, operator grants.
const usdc = (m: { usdc?: string } | undefined) => (m?.usdc ? `${m.usdc.replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '')} USDC` : '');

// biome-ignore lint/suspicious/noExplicitAny: operator answers are validated by the typed client; here they are only printed
type Json = Record<string, any>;

/** Runs `fn` on the operator API with the API key (operator endpoints refuse OAuth tokens). */
async function operator<T>(ctx: Context, fn: (op: GatewayClient['operator']) => Promise<T>): Promise<T> {
  const c = ctx.credential;
  if (!c) throw new CliError('NOT_SIGNED_IN', `not signed in to ${ctx.url}: run \`farebox login --api-key sk_live_...\` with an operator's key`);
  if (c.kind !== 'api-key') throw new CliError('USAGE', 'operator commands need an API key: `farebox login --api-key sk_live_...` or FAREBOX_API_KEY');
  const gw = await ctx.gateway();
  return gatewayCall(() => fn(gw.operator));
}

/** `farebox dispute <escrowId>`: the funder asks the platform to dispute an escrow it paid (refund when never served). */
export async function runDispute(ctx: Context, escrowId: string, opts: { keypair: string; reason?: string }): Promise<CommandResult> {
  const secret = await readKeypair(opts.keypair);
  const platform = await gatewayCall(() => ctx.anonymous().platform.key());
  const network = String(platform.network);
  const client = (() => {
    try {
      return createClient({
        network: network === 'local' || network === 'mainnet' ? network : 'testnet',
        ...(network === 'local' && typeof platform.horizonUrl === 'string' ? { devnetUrl: platform.horizonUrl } : {}),
        secret,
        gatewayUrl: ctx.url,
        env: {},
      });
    } catch (e) {
      throw new CliError('USAGE', (e as Error).message);
    }
  })();
  const d = await gatewayCall(() => client.dispute(escrowId, opts.reason !== undefined ? { reason: opts.reason } : {}));
  const human = pairs([
    ['escrow', d.escrowId],
    ['state', d.state === 'resolved' ? `resolved (${d.resolution})` : 'open: the platform resolves it (automatic refund if never served, else an operator)'],
    ['dispute tx', d.explorerUrl],
    ['resolution tx', d.resolveExplorerUrl],
    ['paid out', d.distributions?.map((x) => `${x.address}: ${x.amount} base units`).join(', ')],
  ]);
  return result({ ...d, distributions: d.distributions?.map((x) => ({ address: x.address, amount: x.amount.toString() })) }, human);
}

/** Opens the gateway's database directly (never the public API): DATABASE_URL, else the embedded PGlite in the data dir. */
async function withDatabase<T>(
  ctx: Context,
  opts: { dataDir?: string; databaseUrl?: string },
  fn: (db: import('@farebox/ledger').Database, core: typeof import('@farebox/gateway-core')) => Promise<T>,
): Promise<T> {
  let ledger: typeof import('@farebox/ledger');
  let core: typeof import('@farebox/gateway-core');
  try {
    ledger = await import('@farebox/ledger');
    core = await import('@farebox/gateway-core');
  } catch {
    throw new CliError('LOCAL', 'operator grants need the gateway installed next to the CLI (@farebox/gateway-core): run this where the gateway runs');
  }
  const url = opts.databaseUrl ?? ctx.settings.databaseUrl;
  const dataDir = opts.dataDir ?? ctx.settings.dataDir;
  let db: import('@farebox/ledger').Database;
  try {
    db = await ledger.openDatabase({ ...(url ? { url } : { dataDir: join(dataDir, 'db') }) });
  } catch (e) {
    throw new CliError(
      'LOCAL',
      `cannot open the gateway database (${url ? 'DATABASE_URL' : join(dataDir, 'db')}): ${e instanceof Error ? e.message : String(e)}${url ? '' : ' (stop the gateway first: the embedded database allows one process)'}`,
    );
  }
  try {
    await ledger.migrate(db, core.GATEWAY_MIGRATIONS_DIR, 'gateway');
    return await fn(db, core);
  } finally {
    await db.close();
  }
}

const cliActor = () => {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    return 'cli';
  }
};

export async function runOperatorGrant(ctx: Context, email: string, opts: { dataDir?: string; databaseUrl?: string }): Promise<CommandResult> {
  const r = await withDatabase(ctx, opts, async (db, core) => {
    try {
      return await core.grantOperator(db, email, cliActor());
    } catch (e) {
      throw new CliError('USAGE', e instanceof Error ? e.message : String(e));
    }
  });
  return result(r, r.granted ? `${r.email} (${r.account_id}) is now an operator` : `${r.email} (${r.account_id}) was already an operator`);
}

export async function runOperatorRevoke(ctx: Context, email: string, opts: { dataDir?: string; databaseUrl?: string }): Promise<CommandResult> {
  const r = await withDatabase(ctx, opts, (db, core) => core.revokeOperator(db, email, cliActor()));
  const who = r.account_id ? `${r.email} (${r.account_id})` : `${r.email} (no such account)`;
  return result(r, r.revoked ? `${who} is no longer an operator` : `${who} was not an operator (by grant; FAREBOX_OPERATORS is configuration)`);
}

export async function runOperatorList(ctx: Context, opts: { dataDir?: string; databaseUrl?: string }): Promise<CommandResult> {
  const list = await withDatabase(ctx, opts, (db, core) => core.listOperators(db));
  const data = list.map((o) => ({ account_id: o.accountId, email: o.email, granted_by: o.grantedBy, granted_at: o.grantedAt.toISOString() }));
  return result(
    data,
    `${table(data, ['account_id', 'email', 'granted_by', 'granted_at'])}\n(FAREBOX_OPERATORS adds operators by account id, in configuration)`,
  );
}

export async function runOperatorDisputes(ctx: Context, opts: { state?: string }): Promise<CommandResult> {
  const list = (await operator(ctx, (op) => op.disputes({ state: (opts.state ?? 'open') as 'open' }))) as Json[];
  const rows = list.map((d) => ({
    escrow: d.escrow_id,
    state: d.state,
    amount: `${d.amount_asset_amount} USDC`,
    served: d.served ? 'yes' : 'no',
    payer: d.requested_by,
    opened: d.opened_at,
    resolution: d.resolution ?? '',
  }));
  return result(list, table(rows, ['escrow', 'state', 'amount', 'served', 'payer', 'opened', 'resolution']));
}

export async function runOperatorResolve(
  ctx: Context,
  escrowId: string,
  opts: { refund?: boolean; payer?: string; receiver?: string },
): Promise<CommandResult> {
  const split = opts.payer !== undefined || opts.receiver !== undefined;
  if (opts.refund === split) throw new CliError('USAGE', 'choose --refund, or --payer <usdc> and --receiver <usdc> for a split');
  let body: DisputeDecision = { action: 'refund' };
  if (split) {
    if (opts.payer === undefined || opts.receiver === undefined)
      throw new CliError('USAGE', 'a split needs both --payer and --receiver (USDC amounts summing to the escrow balance)');
    try {
      body = { action: 'split', payer_base_units: parseAmount(opts.payer).toString(), receiver_base_units: parseAmount(opts.receiver).toString() };
    } catch (e) {
      throw new CliError('USAGE', e instanceof Error ? e.message : String(e));
    }
  }
  const d = (await operator(ctx, (op) => op.resolveDispute(escrowId, body))) as Json;
  return result(
    d,
    pairs([
      ['escrow', d.escrow_id],
      ['resolution', d.resolution],
      ['paid out', (d.distributions as Json[]).map((x) => `${x.address}: ${x.base_units}`).join(', ')],
      ['tx', d.resolve_explorer_url],
    ]),
  );
}

export async function runOperatorTreasury(ctx: Context): Promise<CommandResult> {
  const t = (await operator(ctx, (op) => op.treasury())) as Json;
  return result(
    t,
    pairs([
      ['treasury', t.address],
      ['on chain', usdc(t.balance)],
      ['owed to publishers', usdc(t.owed_to_publishers)],
      ['still to fund', usdc(t.to_fund)],
      ['in escrows', `${usdc(t.in_escrows)} (on chain ${usdc(t.escrows_on_chain)})`],
      ['surplus', usdc(t.surplus)],
      ['credits outstanding', usdc(t.credits_outstanding)],
      ['open disputes', `${t.open_disputes.count} (${usdc(t.open_disputes)})`],
    ]),
  );
}

export async function runOperatorSettlements(ctx: Context, opts: { state?: string; limit?: string }): Promise<CommandResult> {
  const list = (await operator(ctx, (op) =>
    op.settlements({ ...(opts.state ? { state: opts.state } : {}), ...(opts.limit ? { limit: Number(opts.limit) } : {}) }),
  )) as Json[];
  const rows = list.map((c) => ({
    id: c.id,
    state: c.state,
    publisher: c.publisher_owner,
    calls: c.calls,
    gross: c.gross.usd,
    stalled: c.stalled ? 'yes' : '',
    failure: c.last_failure?.message ?? '',
  }));
  return result(list, table(rows, ['id', 'state', 'publisher', 'calls', 'gross', 'stalled', 'failure']));
}

export async function runOperatorRetry(ctx: Context, cycleId: string): Promise<CommandResult> {
  const r = (await operator(ctx, (op) => op.retrySettlement(cycleId))) as Json;
  return result(r, `cycle ${r.id}: ${r.from} -> ${r.state}${r.error ? ` (error: ${r.error})` : ''}`);
}

export async function runOperatorRevenue(ctx: Context, opts: { days?: string }): Promise<CommandResult> {
  const r = (await operator(ctx, (op) => op.revenue({ days: Number(opts.days ?? '30') }))) as Json;
  const rows = (r.points as Json[]).map((p) => ({ day: p.day, calls: p.calls, volume: usdc(p.volume), revenue: usdc(p.revenue) }));
  return result(r, `${table(rows, ['day', 'calls', 'volume', 'revenue'])}\ntotal revenue: ${usdc(r.total)}`);
}

export async function runOperatorAudit(ctx: Context, opts: { limit?: string }): Promise<CommandResult> {
  const list = (await operator(ctx, (op) => op.audit({ limit: Number(opts.limit ?? '50') }))) as Json[];
  return result(
    list,
    table(
      list.map((e) => ({ at: e.at, actor: e.actor, action: e.action, target: e.target ?? '', outcome: e.outcome })),
      ['at', 'actor', 'action', 'target', 'outcome'],
    ),
  );
}

export const operatorCommands: CommandGroup = {
  name: 'operator',
  register(program, { act }) {
    program
      .command('dispute <escrowId>')
      .description('ask the platform to dispute an escrow you funded (a service that failed): refunded once resolved')
      .requiredOption('--keypair <path>', 'the payer keypair file that funded the escrow')
      .option('--reason <text>', 'what went wrong')
      .action((escrowId: string, o: { keypair: string; reason?: string }) => act((ctx) => runDispute(ctx, escrowId, o))());

    const op = program.command('operator').description('operator tools: disputes, treasury, settlements, revenue, audit log');
    const db = (cmd: Command) =>
      cmd
        .option('--data-dir <path>', 'gateway data directory (embedded database; default FAREBOX_DATA_DIR or ./.farebox)')
        .option('--database-url <url>', 'PostgreSQL URL (default DATABASE_URL)');
    db(op.command('grant <account>').description('make an existing account (e-mail or acct_ id) an operator (writes the gateway database directly)')).action(
      (email: string, o: { dataDir?: string; databaseUrl?: string }) => act((ctx) => runOperatorGrant(ctx, email, o))(),
    );
    db(op.command('revoke <account>').description('take the operator role back (database grant; e-mail or acct_ id)')).action(
      (email: string, o: { dataDir?: string; databaseUrl?: string }) => act((ctx) => runOperatorRevoke(ctx, email, o))(),
    );
    db(op.command('list').description('operators granted in the database')).action((o: { dataDir?: string; databaseUrl?: string }) =>
      act((ctx) => runOperatorList(ctx, o))(),
    );
    op.command('disputes')
      .description('disputes on direct escrows')
      .option('--state <state>', 'open (default), resolved or all')
      .action((o: { state?: string }) => act((ctx) => runOperatorDisputes(ctx, o))());
    op.command('resolve <escrowId>')
      .description('resolve a dispute: --refund, or a split with --payer and --receiver (USDC, summing to the balance)')
      .option('--refund', 'everything back to the payer')
      .option('--payer <usdc>', "the payer's share")
      .option('--receiver <usdc>', "the service owner's share")
      .action((escrowId: string, o: { refund?: boolean; payer?: string; receiver?: string }) => act((ctx) => runOperatorResolve(ctx, escrowId, o))());
    op.command('treasury')
      .description("the treasury's on-chain balance against what it owes publishers")
      .action(() => act((ctx) => runOperatorTreasury(ctx))());
    op.command('settlements')
      .description('settlement cycles of every publisher, with failures')
      .option('--state <state>', 'all, active or a cycle state')
      .option('--limit <n>', '1 to 200')
      .action((o: { state?: string; limit?: string }) => act((ctx) => runOperatorSettlements(ctx, o))());
    op.command('retry <cycleId>')
      .description('resume an interrupted settlement cycle now')
      .action((cycleId: string) => act((ctx) => runOperatorRetry(ctx, cycleId))());
    op.command('revenue')
      .description('platform revenue per day')
      .option('--days <n>', '1 to 365 (default 30)')
      .action((o: { days?: string }) => act((ctx) => runOperatorRevenue(ctx, o))());
    op.command('audit')
      .description('the audit log of operator actions, newest first')
      .option('--limit <n>', '1 to 1000 (default 50)')
      .action((o: { limit?: string }) => act((ctx) => runOperatorAudit(ctx, o))());
  },
};
