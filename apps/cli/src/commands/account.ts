import { randomBytes } from 'node:crypto';
import { createGatewayClient, GatewayApiError, ClientError } from '@farebox/client';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { pairs, table, usd } from '../format.js';
import { gatewayCall, result, walletNote, type CommandGroup, type CommandResult } from './shared.js';

// `farebox login | logout | whoami | balance | topup | transactions`: the account.

export async function runLogin(ctx: Context, opts: { apiKey?: string }): Promise<CommandResult> {
  if (opts.apiKey !== undefined) {
    const key = opts.apiKey.trim();
    if (!key.startsWith('sk_live_')) throw new CliError('USAGE', 'an API key starts with sk_live_ (create one in the dashboard under Credentials)');
    const me = await gatewayCall(() => createGatewayClient({ baseUrl: ctx.url, apiKey: key }).me());
    await ctx.saveConfig({ url: ctx.url, apiKey: key, email: me.email });
    await ctx
      .oauthSession()
      .signOut()
      .catch(() => undefined);
    return result(
      { url: ctx.url, email: me.email, credential: 'api-key' },
      `Signed in to ${ctx.url} as ${me.email} with an API key (stored in ${ctx.configPath}).`,
    );
  }
  const session = ctx.oauthSession();
  // A fresh sign-in: forget what was stored for this gateway.
  await session.signOut();
  const token = await session.accessToken();
  const me = await gatewayCall(() => createGatewayClient({ baseUrl: ctx.url, accessToken: token }).me());
  await ctx.saveConfig({ url: ctx.url, oauth: true, email: me.email });
  return result(
    { url: ctx.url, email: me.email, credential: 'oauth' },
    `Signed in to ${ctx.url} as ${me.email} through the browser.\nThis connection can search, call, and read the balance and transactions; keys and publishing need \`farebox login --api-key\`.`,
  );
}

export async function runLogout(ctx: Context): Promise<CommandResult> {
  await ctx
    .oauthSession()
    .signOut()
    .catch(() => undefined);
  await ctx.saveConfig({ url: ctx.url });
  return result({ url: ctx.url, signedOut: true }, `Signed out of ${ctx.url}.`);
}

export async function runWhoami(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const me = await gatewayCall(() => gw.me());
  return result(
    { ...me, url: ctx.url, credential: ctx.credential?.kind },
    pairs([
      ['email', me.email],
      ['account', me.id],
      ['gateway', ctx.url],
      ['signed in with', ctx.credential?.kind === 'oauth' ? 'browser (OAuth)' : 'API key'],
      ['wallet', me.wallet_status === 'provisioning' ? `${me.custodial_wallet} (${walletNote(me.wallet_status)})` : me.custodial_wallet],
      ['publisher', me.is_publisher ? (me.publisher_name ?? 'yes') : 'no'],
      ['balance', usd(me.total_usd)],
    ]),
  );
}

export async function runBalance(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const b = await gatewayCall(() => gw.balance());
  return result(
    b,
    pairs([
      ['credits', `${usd(b.balance_usd)} (${b.balance_base_units} base units)`],
      ['wallet', `${usd(b.wallet_usd)} (${b.wallet_base_units} base units)`],
      ['total', usd(b.total_usd)],
      ['note', walletNote(b.wallet_status) === undefined ? undefined : `your wallet is ${walletNote(b.wallet_status)}`],
    ]),
  );
}

/** How long `farebox topup` waits for an earlier attempt with the same key (the gateway leases a top-up's key for 3 minutes). */
const TOPUP_WAIT_MS = 180_000;
/** Network errors after which `farebox topup` asks again with the same key. */
const TOPUP_NETWORK_RETRIES = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * `farebox topup <usd>`: paid in USDC from the account's wallet where the
 * gateway says so (`topups: 'wallet'`: progress on stderr, the payment's
 * explorer link at the end), else free test credits. One Idempotency-Key per
 * top-up (given, or made here): a request that got no answer is asked again
 * with the same key, and an attempt still in progress is waited for, so it
 * pays once. A top-up whose fate is unknown names the command that finds
 * out without paying twice.
 */
export async function runTopup(ctx: Context, amount: string, opts: { idempotencyKey?: string } = {}): Promise<CommandResult> {
  const n = Number(amount);
  if (!/^\d+(\.\d+)?$/.test(amount.trim()) || !Number.isFinite(n) || n <= 0 || n > 1000)
    throw new CliError('USAGE', `amount must be a number of USD, 0 < amount <= 1000 (got ${JSON.stringify(amount)})`);
  const key = opts.idempotencyKey ?? `topup-${randomBytes(12).toString('base64url')}`;
  if (key.length === 0 || key.length > 255) throw new CliError('USAGE', '--idempotency-key must be 1 to 255 characters');
  // Progress is for people: with --json, stderr carries only the JSON error (if any).
  const say = (line: string) => {
    if (!ctx.json) ctx.log(line);
  };
  const gw = await ctx.gateway();
  const mode = (await gatewayCall(() => gw.platform.key())).topups;
  if (mode === 'wallet') say(`Paying ${n} USDC from your wallet to the platform; waiting for the settlement network to confirm...`);
  const check = `farebox topup ${amount.trim()} --idempotency-key ${key}`;
  const started = Date.now();
  let networkRetries = 0;
  let waited = false;
  let b: Awaited<ReturnType<typeof gw.topup>>;
  try {
    b = await gatewayCall(async () => {
      for (;;) {
        try {
          return await gw.topup(n, { idempotencyKey: key });
        } catch (e) {
          const network = e instanceof ClientError && !(e instanceof GatewayApiError) && e.code === 'NETWORK';
          const inProgress = e instanceof GatewayApiError && e.status === 409 && /in progress/.test(e.message);
          if (Date.now() - started > TOPUP_WAIT_MS || !(inProgress || (network && networkRetries < TOPUP_NETWORK_RETRIES))) throw e;
          if (network) {
            networkRetries++;
            say(
              `No answer from the gateway (${e.message.replace(/^[A-Z]+ \S+ failed: /, '')}); asking again with the same Idempotency-Key ${key} (it pays once)...`,
            );
            await sleep(500 * 2 ** networkRetries);
          } else {
            if (!waited) say(`An earlier attempt with the Idempotency-Key ${key} is still being processed; waiting for its answer...`);
            waited = true;
            await sleep(2000);
          }
        }
      }
    });
  } catch (e) {
    // Paid or not is unknown (no answer, or submitted and not confirmed yet): the same key tells, and never pays twice.
    const status = e instanceof CliError && typeof e.data.status === 'number' ? e.data.status : undefined;
    const refused =
      status !== undefined && ((status >= 400 && status < 500 && !(status === 409 && /in progress/.test((e as Error).message))) || status === 503);
    const unknown = e instanceof CliError && !refused && !/nothing was charged/.test(e.message);
    if (e instanceof CliError && unknown) {
      throw new CliError(e.code, `${e.message}. To see what became of this top-up without paying twice, run: ${check}`, { ...e.data, idempotencyKey: key });
    }
    if (e instanceof CliError) throw new CliError(e.code, e.message, { ...e.data, idempotencyKey: key });
    throw e;
  }
  const t = b.topup;
  if (t.paid_with === 'wallet') {
    const state =
      t.status === 'completed'
        ? `Paid ${t.amount_usd} USDC from your wallet.`
        : `Top-up of ${t.amount_usd} USDC from your wallet: ${t.status}${t.note ? ` (${t.note})` : ''}.`;
    return result(b, `${state} Credits now ${usd(b.balance_usd)}.\n  payment   ${t.tx_signature ?? '(none)'}\n  explorer  ${t.explorer_url ?? '(not yet)'}`);
  }
  return result(b, `Added ${usd(n)} of free test credits (nothing was paid). Credits now ${usd(b.balance_usd)}.`);
}

/** What kind of top-up a Transaction item is. */
function topupKind(t: { note?: string | null; paid_with?: string | null }): string {
  if (t.note === 'signup') return 'sign-up credit';
  if (t.paid_with === 'wallet') return 'topup (wallet)';
  if (typeof t.note === 'string' && t.note.startsWith('free')) return 'topup (free)';
  return 'topup';
}

export async function runTransactions(ctx: Context, opts: { limit?: string }): Promise<CommandResult> {
  const limit = opts.limit === undefined ? undefined : Number(opts.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 500)) throw new CliError('USAGE', '--limit must be an integer from 1 to 500');
  const gw = await ctx.gateway();
  const txs = await gatewayCall(() => gw.transactions(limit === undefined ? {} : { limit }));
  return result(
    txs,
    table(
      txs.map((t) => ({
        when: t.created_at.replace('T', ' ').slice(0, 19),
        type: t.type === 'topup' ? topupKind(t) : t.type,
        service: t.service ?? '',
        amount: usd(typeof t.amount_usd === 'number' ? t.amount_usd : t.amount_lamports / 1e7),
        status: t.status,
        // A paid top-up's payment: its explorer link, the submitted hash while it waits for the network, or why it failed.
        'on chain':
          t.explorer_url ??
          (t.status === 'failed' && t.note ? `failed: ${t.note}` : t.status === 'pending' && t.tx_signature ? `submitted ${t.tx_signature}` : ''),
      })),
      ['when', 'type', 'service', 'amount', 'status', 'on chain'],
    ),
  );
}

export const accountCommands: CommandGroup = {
  name: 'account',
  register(program, { act }) {
    program
      .command('login')
      .description('sign in: through the browser (OAuth), or store an API key')
      .option('--api-key <key>', 'store this API key instead of signing in through the browser')
      .action((o: { apiKey?: string }) => {
        const key = o.apiKey ?? program.opts<{ apiKey?: string }>().apiKey;
        return act((ctx) => runLogin(ctx, key !== undefined ? { apiKey: key } : {}))();
      });
    program
      .command('logout')
      .description('forget the stored credential')
      .action(() => act((ctx) => runLogout(ctx))());
    program
      .command('whoami')
      .description('the signed-in account')
      .action(() => act((ctx) => runWhoami(ctx))());
    program
      .command('balance')
      .description('credits and wallet balance')
      .action(() => act((ctx) => runBalance(ctx))());
    program
      .command('topup <usd>')
      .description('add credits (USD, up to 1000): paid in USDC from your wallet, or free test credits on the devnet')
      .option(
        '--idempotency-key <key>',
        'the top-up happens once per key: running the command again with the same key shows the first answer instead of paying again (default: a new key, reused when the request is retried)',
      )
      .action((amount: string, o: { idempotencyKey?: string }) => act((ctx) => runTopup(ctx, amount, o))());
    program
      .command('transactions')
      .description('recent top-ups and calls, newest first')
      .option('--limit <n>', '1 to 500 (default 50)')
      .action((o: { limit?: string }) => act((ctx) => runTransactions(ctx, o))());
  },
};
