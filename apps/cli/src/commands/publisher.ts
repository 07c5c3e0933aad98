import { MIN_PRICE_BASE_UNITS, formatAmount, parseAmount, parsePrice, serviceNameProblem, signPublisherLink } from '@farebox/protocol';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { pairs, table, usd } from '../format.js';
import { gatewayCall, priceOf, readKeypair, result, walletNote, type CommandGroup, type CommandResult } from './shared.js';

// `farebox publisher ...`: publish paid services and see what they earn.

/** Why a price under MIN_PRICE_BASE_UNITS is refused (the gateway and the provider SDK refuse it too). */
export const MIN_PRICE_PROBLEM = `must be at least ${formatAmount(MIN_PRICE_BASE_UNITS, { trim: true })} USDC (${MIN_PRICE_BASE_UNITS} base units), so that the 5 % platform fee of a call is at least one base unit`;

/**
 * A `--price` in USDC to base units: a decimal string (`0.002`); a price under the lowest, a currency sign and a price
 * over 100 USDC (`--max-price` raises the bound; `20000` is likely base units) are refused with the unit and an example.
 */
export function priceUnits(price: string, maxPrice?: string, raise = '--max-price {}'): number {
  let max: bigint | undefined;
  if (maxPrice !== undefined) {
    try {
      max = parseAmount(maxPrice);
    } catch (e) {
      throw new CliError('USAGE', `--max-price ${JSON.stringify(maxPrice)}: ${(e as Error).message}`);
    }
  }
  let units: bigint;
  try {
    units = parsePrice(price, { field: '--price', raise, ...(max === undefined ? {} : { max }) });
  } catch (e) {
    throw new CliError('USAGE', (e as Error).message);
  }
  if (units < MIN_PRICE_BASE_UNITS) throw new CliError('USAGE', `--price ${JSON.stringify(price)}: ${MIN_PRICE_PROBLEM}`);
  return Number(units);
}

/** What the gateway is sent: the checked price in USDC (`price`), with `maxPrice` when the bound is raised. */
const priceInput = (price: string, maxPrice?: string) => ({
  price: formatAmount(BigInt(priceUnits(price, maxPrice)), { trim: true }),
  ...(maxPrice === undefined ? {} : { maxPrice }),
});

export async function runPublisherActivate(ctx: Context, name: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.publisher.activate(name));
  const note = walletNote(r.wallet_status);
  return result(
    r,
    `Publisher "${r.publisher_name}" is active${typeof r.payout_wallet === 'string' ? `; payouts go to ${r.payout_wallet}` : ''}.${note ? `\nThe wallet is ${note}.` : ''}`,
  );
}

export async function runPublisherRegister(
  ctx: Context,
  opts: { service: string; price: string; maxPrice?: string; endpoint: string; description: string },
): Promise<CommandResult> {
  // The gateway's rule (@farebox/protocol's name policy), checked before anything is sent.
  const problem = serviceNameProblem(opts.service);
  if (problem) throw new CliError('USAGE', `--service ${JSON.stringify(opts.service)}: ${problem}`);
  const gw = await ctx.gateway();
  const r = await gatewayCall(() =>
    gw.agents.register({ service: opts.service, ...priceInput(opts.price, opts.maxPrice), endpoint: opts.endpoint, description: opts.description }),
  );
  return result(r, `Registered "${r.service}" at ${r.endpoint} for ${priceOf(r)} USDC per call.${r.explorerUrl ? `\n${r.explorerUrl}` : ''}`);
}

export async function runPublisherUpdate(
  ctx: Context,
  service: string,
  opts: { price?: string; maxPrice?: string; endpoint?: string; description?: string },
): Promise<CommandResult> {
  if (opts.price === undefined && opts.endpoint === undefined && opts.description === undefined)
    throw new CliError('USAGE', 'nothing to change: give --price, --endpoint or --description');
  const gw = await ctx.gateway();
  const r = await gatewayCall(() =>
    gw.agents.update(service, {
      ...(opts.price !== undefined ? priceInput(opts.price, opts.maxPrice) : {}),
      ...(opts.endpoint !== undefined ? { endpoint: opts.endpoint } : {}),
      ...(opts.description !== undefined ? { description: opts.description } : {}),
    }),
  );
  return result(r, `Updated "${r.service}": ${priceOf(r)} USDC per call at ${r.endpoint}.`);
}

export async function runPublisherRemove(ctx: Context, service: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.agents.remove(service));
  return result(r, `Removed "${service}" from the registry.${typeof r.explorerUrl === 'string' ? `\n${r.explorerUrl}` : ''}`);
}

export async function runPublisherOverview(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const o = await gatewayCall(() => gw.publisher.overview());
  const n = (k: string) => {
    const v = (o as Record<string, unknown>)[k];
    return typeof v === 'number' ? v : undefined;
  };
  return result(
    o,
    [
      pairs([
        ['publisher', typeof o.publisher_name === 'string' ? o.publisher_name : undefined],
        [
          'payout wallet',
          typeof o.payout_wallet === 'string'
            ? `${o.payout_wallet}${o.wallet_status === 'provisioning' ? ` (${walletNote(o.wallet_status)})` : ''}`
            : undefined,
        ],
        ['calls', o.calls],
        ['earned (net)', usd(n('earned_usd'))],
        ['pending payout', usd(n('pending_usd'))],
        ['paid out', usd(n('settled_usd'))],
      ]),
      '',
      table(
        o.services.map((s) => ({ service: s.service, price: `${priceOf(s)} USDC`, calls: s.totalCalls, endpoint: s.endpoint })),
        ['service', 'price', 'calls', 'endpoint'],
      ),
    ].join('\n'),
  );
}

export async function runPublisherSettlements(ctx: Context, opts: { limit?: string }): Promise<CommandResult> {
  const limit = opts.limit === undefined ? undefined : Number(opts.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 200)) throw new CliError('USAGE', '--limit must be an integer from 1 to 200');
  const gw = await ctx.gateway();
  const list = await gatewayCall(() => gw.publisher.settlements(limit === undefined ? {} : { limit }));
  const s = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  return result(
    list,
    table(
      list.map((x) => ({
        id: x.id,
        status: s(x.state),
        net: usd(x.net.usd),
        calls: s(x.calls),
        tx: s(x.transactions.at(-1)?.explorer_url ?? x.escrow_url),
        created: s(x.opened_at),
      })),
      ['id', 'status', 'net', 'calls', 'tx', 'created'],
    ),
  );
}

export async function runPublisherAnalytics(ctx: Context, opts: { days?: string }): Promise<CommandResult> {
  const days = opts.days === undefined ? undefined : Number(opts.days);
  if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > 90)) throw new CliError('USAGE', '--days must be an integer from 1 to 90');
  const gw = await ctx.gateway();
  const points = await gatewayCall(() => gw.publisher.analytics(days === undefined ? {} : { days }));
  const max = Math.max(1, ...points.map((p) => p.calls));
  return result(
    points,
    table(
      points.map((p) => ({ day: p.day, calls: p.calls, earned: usd(p.earned_usd), '': '█'.repeat(Math.round((p.calls / max) * 30)) })),
      ['day', 'calls', 'earned', ''],
    ),
  );
}

/** `farebox publisher link --keypair <file>`: the key signs the account's challenge; its services join the publisher views. */
export async function runPublisherLink(ctx: Context, opts: { keypair: string }): Promise<CommandResult> {
  const secret = await readKeypair(opts.keypair);
  const gw = await ctx.gateway();
  const { owner } = await signPublisherLink(secret, '');
  const ch = await gatewayCall(() => gw.publisher.linkChallenge(owner));
  const r = await gatewayCall(async () => gw.publisher.link({ challenge: ch.challenge, ...(await signPublisherLink(secret, ch.challenge)) }));
  const names = r.services.map((x) => x.service);
  return result(
    r,
    `Linked ${owner} to your account${names.length ? ` (${names.join(', ')})` : ''}: its services and earnings now show in \`farebox publisher overview\`, \`settlements\` and \`analytics\`, and \`farebox publisher settle\` pays them out (to ${owner}).`,
  );
}

const cycleLine = (c: {
  calls: number;
  gross: { usd: number };
  fee: { usd: number; pct: number };
  net: { usd: number };
  receiver: string;
  transactions: Array<{ step: string; explorer_url: string }>;
}) => {
  const release = c.transactions.find((t) => t.step === 'release');
  return `${c.calls} calls: gross ${usd(c.gross.usd)}, fee ${usd(c.fee.usd)} (${c.fee.pct} %), net ${usd(c.net.usd)} paid to ${c.receiver}${release ? `\n  release: ${release.explorer_url}` : ''}`;
};

/** `farebox publisher settle`: closes the cycles now and runs them to the end (where the operator has settlement on). */
export async function runPublisherSettle(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.publisher.settle());
  const done = r.settlements ?? (r.settlement ? [r.settlement] : []);
  if (!r.settled || done.length === 0) return result(r, r.message ?? 'nothing to settle: no earnings since the last settlement');
  return result(r, ['Settled now:', ...done.map((c) => `- ${cycleLine(c)}`)].join('\n'));
}

/** `farebox publisher earnings <G...>`: any owner key's services, gross, fee, net and payouts (no credential needed). */
export async function runPublisherByOwner(ctx: Context, owner: string): Promise<CommandResult> {
  const gw = ctx.anonymous();
  const o = await gatewayCall(() => gw.publisher.byOwner(owner));
  return result(
    o,
    [
      pairs([
        ['owner', o.owner],
        ['calls', o.calls],
        ['gross', usd(o.gross_usd)],
        [`fee (${o.fee.pct} %)`, usd(o.fee_usd)],
        ['net', usd(o.net_usd)],
        ['pending payout', usd(o.pending_usd)],
        ['paid out', usd(o.settled_usd)],
      ]),
      '',
      table(
        o.services.map((x) => ({ service: x.service, price: `${priceOf(x)} USDC`, calls: x.totalCalls, 'earned (net)': usd(x.totalEarned) })),
        ['service', 'price', 'calls', 'earned (net)'],
      ),
      '',
      o.payouts.length ? ['Payouts:', ...o.payouts.map((c) => `- ${c.state} ${cycleLine(c)}`)].join('\n') : 'Payouts: (none yet)',
    ].join('\n'),
  );
}

export const publisherCommands: CommandGroup = {
  name: 'publisher',
  register(program, { act }) {
    const pub = program.command('publisher').description('publish paid services and see what they earn');
    pub
      .command('activate <name>')
      .description('become a publisher')
      .action((name: string) => act((ctx) => runPublisherActivate(ctx, name))());
    pub
      .command('register')
      .description('register a service on the registry (signed by your account wallet)')
      .requiredOption('--service <name>', 'service name')
      .requiredOption('--price <usdc>', 'price per call in USDC, e.g. 0.002 (not base units)')
      .option('--max-price <usdc>', 'accept a --price above 100 USDC, up to this')
      .requiredOption('--endpoint <url>', 'https address of the service')
      .requiredOption('--description <text>', 'what it does and what input it expects')
      .action((o: { service: string; price: string; maxPrice?: string; endpoint: string; description: string }) =>
        act((ctx) => runPublisherRegister(ctx, o))(),
      );
    pub
      .command('update <service>')
      .description('change price, endpoint or description')
      .option('--price <usdc>', 'price per call in USDC, e.g. 0.002 (not base units)')
      .option('--max-price <usdc>', 'accept a --price above 100 USDC, up to this')
      .option('--endpoint <url>')
      .option('--description <text>')
      .action((service: string, o: { price?: string; maxPrice?: string; endpoint?: string; description?: string }) =>
        act((ctx) => runPublisherUpdate(ctx, service, o))(),
      );
    pub
      .command('remove <service>')
      .description('remove a service from the registry')
      .action((service: string) => act((ctx) => runPublisherRemove(ctx, service))());
    pub
      .command('overview')
      .description('earnings, pending payout, services')
      .action(() => act((ctx) => runPublisherOverview(ctx))());
    pub
      .command('settlements')
      .description('payouts')
      .option('--limit <n>', '1 to 200')
      .action((o: { limit?: string }) => act((ctx) => runPublisherSettlements(ctx, o))());
    pub
      .command('analytics')
      .description('calls and earnings per day')
      .option('--days <n>', '1 to 90 (default 30)')
      .action((o: { days?: string }) => act((ctx) => runPublisherAnalytics(ctx, o))());
    pub
      .command('link')
      .description('link a service registered with its own key (provider SDK) to your account: its earnings show in overview, settlements, analytics, settle')
      .option('--keypair <file>', 'the service owner key: a secret seed (S...) or JSON with "secret"', '.farebox/keypair')
      .action((o: { keypair: string }) => act((ctx) => runPublisherLink(ctx, o))());
    pub
      .command('settle')
      .description('pay out your earnings now: close the settlement cycles and run them to the end (where the gateway has settlement on)')
      .action(() => act((ctx) => runPublisherSettle(ctx))());
    pub
      .command('earnings <owner>')
      .description("any owner key's services, gross, fee, net and payouts (no login needed)")
      .action((owner: string) => act((ctx) => runPublisherByOwner(ctx, owner))());
  },
};
