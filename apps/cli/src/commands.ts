import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { createClient, createGatewayClient, GatewayApiError, ClientError, type ProgressEvent } from '@farebox/client';
import { encodeStrKey, formatAmount, parseAmount } from '@farebox/protocol';
import { createAccounts, keypairSigner, resolveNetwork } from '@farebox/stellar';
import { randomBytes } from 'node:crypto';
import { writeFileAtomic } from '@farebox/client/oauth';
import type { Context } from './context.js';
import { CliError } from './errors.js';
import { pairs, table, usd } from './format.js';

/** What every command returns: the data (`--json`) and its human rendering. */
export interface CommandResult<T = unknown> {
  data: T;
  human: string;
}

const result = <T>(data: T, human: string): CommandResult<T> => ({ data, human });

/** A catalog entry's price in USDC, exact from its base units. */
const priceOf = (s: { pricePerCall: number; [k: string]: unknown }) =>
  typeof s.pricePerCallBaseUnits === 'number' ? formatAmount(BigInt(s.pricePerCallBaseUnits)).replace(/(\.\d*?)0+$/, '$1').replace(/\.$/, '') : String(s.pricePerCall);

/** Turns client errors into CLI errors with the gateway's own message. */
export async function gatewayCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof GatewayApiError) {
      const hint = e.status === 403 && /OAuth access token/.test(e.message) ? ' (signed in through the browser: this needs `farebox login --api-key`)' : '';
      throw new CliError('GATEWAY', `${e.message}${hint}`, { status: e.status, body: e.body, ...(e.requestId ? { requestId: e.requestId } : {}) });
    }
    if (e instanceof ClientError) throw new CliError('GATEWAY', e.message, { code: e.code, ...e.data });
    throw e;
  }
}

// ---- account ---------------------------------------------------------------

export async function runLogin(ctx: Context, opts: { apiKey?: string }): Promise<CommandResult> {
  if (opts.apiKey !== undefined) {
    const key = opts.apiKey.trim();
    if (!key.startsWith('sk_live_')) throw new CliError('USAGE', 'an API key starts with sk_live_ (create one in the dashboard under Credentials)');
    const me = await gatewayCall(() => createGatewayClient({ baseUrl: ctx.url, apiKey: key }).me());
    await ctx.saveConfig({ url: ctx.url, apiKey: key, email: me.email });
    await ctx.oauthSession().signOut().catch(() => undefined);
    return result({ url: ctx.url, email: me.email, credential: 'api-key' }, `Signed in to ${ctx.url} as ${me.email} with an API key (stored in ${ctx.configPath}).`);
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
  await ctx.oauthSession().signOut().catch(() => undefined);
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
  if (!/^\d+(\.\d+)?$/.test(amount.trim()) || !Number.isFinite(n) || n <= 0 || n > 1000) throw new CliError('USAGE', `amount must be a number of USD, 0 < amount <= 1000 (got ${JSON.stringify(amount)})`);
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
            say(`No answer (${e.message}); asking again with the same Idempotency-Key ${key} (it pays once)...`);
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
    const refused = status !== undefined && ((status >= 400 && status < 500 && !(status === 409 && /in progress/.test((e as Error).message))) || status === 503);
    const unknown = e instanceof CliError && !refused && !/nothing was charged/.test(e.message);
    if (e instanceof CliError && unknown) {
      throw new CliError(e.code, `${e.message}. To see what became of this top-up without paying twice, run: ${check}`, { ...e.data, idempotencyKey: key });
    }
    if (e instanceof CliError) throw new CliError(e.code, e.message, { ...e.data, idempotencyKey: key });
    throw e;
  }
  const t = b.topup;
  if (t.paid_with === 'wallet') {
    const state = t.status === 'completed' ? `Paid ${t.amount_usd} USDC from your wallet.` : `Top-up of ${t.amount_usd} USDC from your wallet: ${t.status}${t.note ? ` (${t.note})` : ''}.`;
    return result(b, `${state} Credits now ${usd(b.balance_usd)}.\n  payment   ${t.tx_signature ?? '(none)'}\n  explorer  ${t.explorer_url ?? '(not yet)'}`);
  }
  return result(b, `Added ${usd(n)} of free test credits (nothing was paid). Credits now ${usd(b.balance_usd)}.`);
}

/** A note on a wallet that cannot take USDC yet, or whose balance is not known. */
function walletNote(status: string | undefined): string | undefined {
  if (status === 'provisioning') return 'still being set up on chain (account and USDC trustline): wait a moment before sending USDC to it';
  if (status === 'unavailable') return 'the settlement network did not answer: the wallet balance may be out of date';
  return undefined;
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
        'on chain': t.explorer_url ?? (t.status === 'failed' && t.note ? `failed: ${t.note}` : t.status === 'pending' && t.tx_signature ? `submitted ${t.tx_signature}` : ''),
      })),
      ['when', 'type', 'service', 'amount', 'status', 'on chain'],
    ),
  );
}

// ---- catalog and calls -----------------------------------------------------

export async function runSearch(ctx: Context, query: string | undefined): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const services = await gatewayCall(() => (query ? gw.agents.search(query) : gw.agents.list()));
  return result(
    services,
    table(
      services.map((s) => ({ service: s.service, price: `${priceOf(s)} USDC`, calls: s.totalCalls, description: s.description.length > 70 ? `${s.description.slice(0, 69)}…` : s.description })),
      ['service', 'price', 'calls', 'description'],
    ),
  );
}

/** The payload: the argument, else `--file` (`-` is stdin), else stdin when it is not a terminal, else `{}`. */
export async function readPayload(arg: string | undefined, file: string | undefined, stdin: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin): Promise<Record<string, unknown>> {
  if (arg !== undefined && file !== undefined) throw new CliError('USAGE', 'give the payload as an argument or with --file, not both');
  let text: string | undefined = arg;
  let from = 'the payload argument';
  if (file !== undefined && file !== '-') {
    try {
      text = await readFile(file, 'utf8');
    } catch (e) {
      throw new CliError('USAGE', `cannot read ${file}: ${(e as Error).message}`);
    }
    from = file;
  } else if (file === '-' || (text === undefined && stdin.isTTY !== true)) {
    const chunks: Buffer[] = [];
    for await (const c of stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
    text = Buffer.concat(chunks).toString('utf8');
    from = 'stdin';
    if (text.trim() === '' && file !== '-') text = undefined;
  }
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new CliError('USAGE', `${from} is not valid JSON: ${(e as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new CliError('USAGE', `${from} must be a JSON object (the service's input), e.g. '{"text":"hi"}'`);
  return value as Record<string, unknown>;
}

export async function runCall(
  ctx: Context,
  service: string,
  payload: Record<string, unknown>,
  opts: { maxCost?: string; idempotencyKey?: string } = {},
): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() =>
    gw.call(service, payload, { ...(opts.maxCost ? { maxCost: opts.maxCost } : {}), ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}) }),
  );
  const human = [
    JSON.stringify(r.result, null, 2),
    '',
    pairs([
      ['cost', `${usd(r.cost.usd)} (${r.paidWith}, ${r.mode})`],
      ['balance', usd(r.newBalance.usd)],
      ['call', r.callId],
      ['explorer', r.explorerUrl],
    ]),
  ].join('\n');
  return result(r, human);
}

const STEP_LABEL: Record<ProgressEvent['step'], string> = {
  quote: 'Getting a quote',
  deploy: 'Opening the escrow',
  fund: 'Funding the escrow',
  call: 'Calling the service',
  settled: 'Settled',
};

/** Reads a keypair file: a secret seed (`S...`) on its own, or JSON with `secret`. */
export async function readKeypair(path: string): Promise<string> {
  let text: string;
  try {
    text = (await readFile(path, 'utf8')).trim();
  } catch (e) {
    throw new CliError('USAGE', `cannot read the keypair ${path}: ${(e as Error).message}`);
  }
  let secret = text;
  if (text.startsWith('{')) {
    try {
      const j = JSON.parse(text) as { secret?: unknown; secretKey?: unknown };
      secret = String(j.secret ?? j.secretKey ?? '');
    } catch {
      secret = '';
    }
  }
  try {
    keypairSigner(secret);
  } catch {
    throw new CliError('USAGE', `${path} does not hold a Stellar secret seed (S...) or JSON with "secret"`);
  }
  return secret;
}

/** A call paid directly from a local keypair through a single-use escrow, with progress on stderr. */
export async function runDirectCall(
  ctx: Context,
  service: string,
  payload: Record<string, unknown>,
  opts: { keypair: string; maxCost?: string; escrowKey?: string; onProgress?: (e: ProgressEvent) => void },
): Promise<CommandResult> {
  const secret = await readKeypair(opts.keypair);
  const platform = await gatewayCall(() => ctx.anonymous().platform.key());
  const network = String(platform.network);
  const escrowKey = opts.escrowKey ?? ctx.env.TRUSTLESS_WORK_API_KEY ?? (network === 'local' ? 'farebox-cli' : undefined);
  if (!escrowKey) throw new CliError('USAGE', 'a direct call needs an escrow API key: --escrow-key or TRUSTLESS_WORK_API_KEY');
  const client = (() => {
    try {
      return createClient({
        network: network === 'local' || network === 'mainnet' ? network : 'testnet',
        ...(network === 'local' && typeof platform.horizonUrl === 'string' ? { devnetUrl: platform.horizonUrl } : {}),
        ...(typeof platform.registryContractId === 'string' ? { contractId: platform.registryContractId } : {}),
        secret,
        escrow: { apiKey: escrowKey },
        platformAddress: platform.treasury,
        env: {},
      });
    } catch (e) {
      throw new CliError('USAGE', (e as Error).message);
    }
  })();
  const r = await gatewayCall(() =>
    client.call(service, payload, {
      ...(opts.maxCost ? { maxCost: opts.maxCost } : {}),
      onProgress: (e) => {
        opts.onProgress?.(e);
        const where = e.explorerUrl ? ` ${e.explorerUrl}` : e.escrowId ? ` escrow ${e.escrowId}` : '';
        if (e.phase === 'done') ctx.log(`  ✓ ${STEP_LABEL[e.step]} (${(e.elapsedMs / 1000).toFixed(1)} s)${where}`);
        else if (e.phase === 'failed') ctx.log(`  ✗ ${STEP_LABEL[e.step]}: ${e.message ?? 'failed'}`);
        else ctx.log(`  … ${STEP_LABEL[e.step]}`);
      },
    }),
  );
  const human = [
    JSON.stringify(r.result, null, 2),
    '',
    pairs([
      ['cost', `${r.cost.usdc} USDC (${usd(r.cost.usd)}) from ${client.payer}`],
      ['escrow', r.escrowId],
      ['release', r.releaseTx],
      ['explorer', r.explorerUrl],
    ]),
  ].join('\n');
  return result({ ...r, payer: client.payer }, human);
}

// ---- credentials -----------------------------------------------------------

export async function runKeysList(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const keys = await gatewayCall(() => gw.apiKeys.list());
  return result(keys, table(keys.map((k) => ({ id: k.id, name: k.name, prefix: k.prefix, created: k.created_at, 'last used': typeof k.last_used_at === 'string' ? k.last_used_at : '' })), ['id', 'name', 'prefix', 'created', 'last used']));
}

export async function runKeysCreate(ctx: Context, name: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const k = await gatewayCall(() => gw.apiKeys.create(name));
  return result(k, `${k.key}\n\nCreated API key "${k.name}" (${k.id}). This is the only time the key is shown: store it now.`);
}

export async function runKeysRevoke(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.apiKeys.revoke(id));
  return result(r, `Revoked API key ${id}.`);
}

export async function runConnectionsList(ctx: Context): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const list = await gatewayCall(() => gw.oauthConnections.list());
  const s = (v: unknown) => (v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  return result(
    list,
    table(
      list.map((c) => ({ id: c.id, app: s(c.client_name), scopes: s(c.scopes), 'daily limit': s(c.daily_limit_usd), connected: s(c.created_at), 'last used': s(c.last_used_at) })),
      ['id', 'app', 'scopes', 'daily limit', 'connected', 'last used'],
    ),
  );
}

export async function runConnectionsRevoke(ctx: Context, id: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.oauthConnections.revoke(id));
  return result(r ?? { id, revoked: true }, `Disconnected ${id}: its tokens no longer work.`);
}

// ---- publisher -------------------------------------------------------------

function priceUnits(price: string): number {
  let units: bigint;
  try {
    units = parseAmount(price);
  } catch (e) {
    throw new CliError('USAGE', `--price: ${(e as Error).message}`);
  }
  if (units <= 0n) throw new CliError('USAGE', '--price must be more than 0 USDC');
  return Number(units);
}

export async function runPublisherActivate(ctx: Context, name: string): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.publisher.activate(name));
  const note = walletNote(r.wallet_status);
  return result(r, `Publisher "${r.publisher_name}" is active${typeof r.payout_wallet === 'string' ? `; payouts go to ${r.payout_wallet}` : ''}.${note ? `\nThe wallet is ${note}.` : ''}`);
}

export async function runPublisherRegister(ctx: Context, opts: { service: string; price: string; endpoint: string; description: string }): Promise<CommandResult> {
  const gw = await ctx.gateway();
  const r = await gatewayCall(() => gw.agents.register({ service: opts.service, pricePerCallLamports: priceUnits(opts.price), endpoint: opts.endpoint, description: opts.description }));
  return result(r, `Registered "${r.service}" at ${r.endpoint} for ${priceOf(r)} USDC per call.${r.explorerUrl ? `\n${r.explorerUrl}` : ''}`);
}

export async function runPublisherUpdate(ctx: Context, service: string, opts: { price?: string; endpoint?: string; description?: string }): Promise<CommandResult> {
  if (opts.price === undefined && opts.endpoint === undefined && opts.description === undefined) throw new CliError('USAGE', 'nothing to change: give --price, --endpoint or --description');
  const gw = await ctx.gateway();
  const r = await gatewayCall(() =>
    gw.agents.update(service, {
      ...(opts.price !== undefined ? { pricePerCallLamports: priceUnits(opts.price) } : {}),
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
        ['payout wallet', typeof o.payout_wallet === 'string' ? `${o.payout_wallet}${o.wallet_status === 'provisioning' ? ` (${walletNote(o.wallet_status)})` : ''}` : undefined],
        ['calls', o.calls],
        ['earned (net)', usd(n('earned_usd'))],
        ['pending payout', usd(n('pending_usd'))],
        ['paid out', usd(n('settled_usd'))],
      ]),
      '',
      table(o.services.map((s) => ({ service: s.service, price: `${priceOf(s)} USDC`, calls: s.totalCalls, endpoint: s.endpoint })), ['service', 'price', 'calls', 'endpoint']),
    ].join('\n'),
  );
}

export async function runPublisherSettlements(ctx: Context, opts: { limit?: string }): Promise<CommandResult> {
  const limit = opts.limit === undefined ? undefined : Number(opts.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 200)) throw new CliError('USAGE', '--limit must be an integer from 1 to 200');
  const gw = await ctx.gateway();
  const list = await gatewayCall(() => gw.publisher.settlements(limit === undefined ? {} : { limit }));
  const s = (v: unknown) => (v === null || v === undefined ? '' : String(v));
  return result(list, table(list.map((x) => ({ id: x.id, status: s(x.state), net: usd(x.net.usd), calls: s(x.calls), tx: s(x.transactions.at(-1)?.explorer_url ?? x.escrow_url), created: s(x.opened_at) })), ['id', 'status', 'net', 'calls', 'tx', 'created']));
}

export async function runPublisherAnalytics(ctx: Context, opts: { days?: string }): Promise<CommandResult> {
  const days = opts.days === undefined ? undefined : Number(opts.days);
  if (days !== undefined && (!Number.isInteger(days) || days < 1 || days > 90)) throw new CliError('USAGE', '--days must be an integer from 1 to 90');
  const gw = await ctx.gateway();
  const points = await gatewayCall(() => gw.publisher.analytics(days === undefined ? {} : { days }));
  const max = Math.max(1, ...points.map((p) => p.calls));
  return result(points, table(points.map((p) => ({ day: p.day, calls: p.calls, earned: usd(p.earned_usd), '': '█'.repeat(Math.round((p.calls / max) * 30)) })), ['day', 'calls', 'earned', '']));
}

// ---- local development -----------------------------------------------------

/** Funds an address with the devnet friendbot (XLM; `usdc` needs the account's USDC trustline). */
export async function runDevnetFund(ctx: Context, address: string, opts: { usdc?: string }): Promise<CommandResult> {
  const platform = await gatewayCall(() => ctx.anonymous().platform.key());
  const friendbot = typeof platform.friendbotUrl === 'string' ? platform.friendbotUrl : undefined;
  if (!friendbot) throw new CliError('USAGE', `${ctx.url} names no friendbot (network ${platform.network})`);
  const url = new URL(friendbot);
  url.searchParams.set('addr', address);
  if (opts.usdc !== undefined) {
    const n = Number(opts.usdc);
    if (!Number.isFinite(n) || n <= 0) throw new CliError('USAGE', '--usdc must be a positive amount');
    url.searchParams.set('usdc', opts.usdc);
  }
  const res = await fetch(url, { method: 'POST' });
  const text = await res.text();
  if (!res.ok) throw new CliError('GATEWAY', `friendbot refused: ${text.slice(0, 300)} (HTTP ${res.status})`);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // plain text answer
  }
  return result({ address, usdc: opts.usdc ?? null, network: platform.network, friendbot: body }, `Funded ${address} on ${String(platform.network)}${opts.usdc ? ` with ${opts.usdc} USDC` : ''}.`);
}

/** Creates (or reuses) a keypair file, funds it, sets the USDC trustline and optionally pays it USDC: ready for `call --direct`. */
export async function runDevnetKeypair(ctx: Context, path: string, opts: { usdc?: string }): Promise<CommandResult> {
  let secret: string;
  let created = false;
  if (existsSync(path)) secret = await readKeypair(path);
  else {
    secret = encodeStrKey('secretSeed', randomBytes(32));
    await writeFileAtomic(resolve(path), `${secret}\n`);
    created = true;
  }
  const signer = keypairSigner(secret);
  const platform = await gatewayCall(() => ctx.anonymous().platform.key());
  if (platform.network !== 'local') throw new CliError('USAGE', `devnet keypair works on the local devnet only (this gateway is on ${String(platform.network)})`);
  const net = resolveNetwork({
    network: 'local',
    devnetUrl: String(platform.horizonUrl),
    ...(typeof platform.registryContractId === 'string' ? { contractId: platform.registryContractId } : {}),
    env: {},
  });
  const accounts = createAccounts(net);
  await accounts.fund(signer.publicKey);
  await accounts.ensureUsdcTrustline(signer);
  if (opts.usdc !== undefined) await runDevnetFund(ctx, signer.publicKey, { usdc: opts.usdc });
  return result(
    { path: resolve(path), publicKey: signer.publicKey, created, usdc: opts.usdc ?? null },
    `${created ? 'Created' : 'Using'} ${resolve(path)} (${signer.publicKey}): funded, USDC trustline set${opts.usdc ? `, ${opts.usdc} USDC paid` : ''}.`,
  );
}

/** Downloads the search model (`@farebox/discovery`) so the gateway's semantic search works offline. */
export async function runModelFetch(_ctx: Context, opts: { dir?: string }): Promise<CommandResult> {
  let discovery: typeof import('@farebox/discovery');
  try {
    discovery = await import('@farebox/discovery');
  } catch {
    throw new CliError('LOCAL', 'model fetch needs @farebox/discovery: npm install -g @farebox/discovery (it brings the ONNX runtime)');
  }
  const r = await discovery.prefetchModel(opts.dir ? { modelDir: opts.dir } : {});
  return result(r, `Model ${r.modelId} (${r.dims} dimensions) is in ${r.path}.`);
}

/**
 * How `farebox dev` starts the local stack: inside a Farebox checkout, the
 * repository's `npm start` script (gateway, examples, demo account);
 * elsewhere the `farebox-gateway` binary (`@farebox/gateway`) from the
 * project's node_modules or the PATH. The CLI spawns it instead of importing
 * the gateway: the gateway is an app with a database and a devnet, the CLI
 * stays a thin client.
 */
export function devCommand(cwd: string, env: Record<string, string | undefined>): { command: string; args: string[]; description: string } | undefined {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const start = join(dir, 'scripts', 'start.mjs');
    const pkg = join(dir, 'package.json');
    if (existsSync(start) && existsSync(pkg) && existsSync(join(dir, 'apps', 'gateway'))) return { command: process.execPath, args: [start], description: `npm start in ${dir}` };
    const bin = join(dir, 'node_modules', '.bin', process.platform === 'win32' ? 'farebox-gateway.cmd' : 'farebox-gateway');
    if (existsSync(bin)) return { command: bin, args: [], description: bin };
    if (dirname(dir) === dir) break;
  }
  try {
    const req = createRequire(join(resolve(cwd), 'noop.js'));
    const main = join(dirname(req.resolve('@farebox/gateway/package.json')), 'dist', 'main.js');
    if (existsSync(main)) return { command: process.execPath, args: [main], description: main };
  } catch {
    // not installed here
  }
  for (const p of (env.PATH ?? '').split(process.platform === 'win32' ? ';' : ':')) {
    const bin = join(p, process.platform === 'win32' ? 'farebox-gateway.cmd' : 'farebox-gateway');
    if (p && existsSync(bin)) return { command: bin, args: [], description: bin };
  }
  return undefined;
}

/** Runs the local stack in the foreground until Ctrl-C; resolves with its exit code. */
export async function runDev(ctx: Context, opts: { port?: string; cwd?: string }): Promise<number> {
  const found = devCommand(opts.cwd ?? process.cwd(), ctx.env);
  if (!found) {
    throw new CliError(
      'LOCAL',
      'cannot find the Farebox gateway: run `farebox dev` inside a Farebox checkout (it runs `npm start`), or install the gateway so `farebox-gateway` is on the PATH',
    );
  }
  if (opts.port !== undefined && !/^\d{1,5}$/.test(opts.port)) throw new CliError('USAGE', '--port must be a port number');
  ctx.log(`Starting the local stack (${found.description})...`);
  // A local stack calls the developer's services on localhost (never the gateway's own port; refused on mainnet).
  const env = {
    ...process.env,
    // The local stack: the embedded devnet (the gateway's default network is testnet).
    ...(process.env.STELLAR_NETWORK || process.env.FAREBOX_NETWORK ? {} : { STELLAR_NETWORK: 'local' }),
    FAREBOX_ALLOW_LOOPBACK_ENDPOINTS: process.env.FAREBOX_ALLOW_LOOPBACK_ENDPOINTS ?? 'true',
    ...(opts.port ? { PORT: opts.port } : {}),
  };
  const child = spawn(found.command, found.args, { stdio: 'inherit', env });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  process.on('SIGINT', forward('SIGINT'));
  process.on('SIGTERM', forward('SIGTERM'));
  return new Promise((resolveExit) => {
    child.on('error', (e) => {
      ctx.log(`cannot start ${found.description}: ${e.message}`);
      resolveExit(1);
    });
    child.on('exit', (code, signal) => resolveExit(code ?? (signal ? 0 : 1)));
  });
}

export async function fileExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
