import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ClientError, createClient, type GatewayService, type ProgressEvent } from '@farebox/client';
import { DEFAULT_GATEWAY_URL } from '@farebox/client/oauth';
import { formatAmount, parseAmount } from '@farebox/protocol';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { pairs, table, usd } from '../format.js';
import { runChannelCall } from './channel.js';
import { runDiscoverySearch } from './discovery.js';
import { gatewayCall, priceOf, readKeypair, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox search | call`: find services and pay them (from credits, or directly through an escrow).

export async function runSearch(ctx: Context, query: string | undefined, o: { limit?: string } = {}): Promise<CommandResult> {
  const gw = await ctx.gateway();
  if (o.limit !== undefined && !/^\d{1,4}$/.test(o.limit)) throw new CliError('USAGE', '--limit must be a whole number');
  const limit = o.limit === undefined ? undefined : Number(o.limit);
  const services = await gatewayCall(() => (query ? gw.agents.search(query, { limit }) : gw.agents.list({ limit })));
  // Which ranking served it (every hit says): never let a keyword-only answer pass for a search by meaning.
  if (services[0]?.search_mode === 'keyword')
    ctx.log('(keyword-only search: the gateway has no embedding model loaded, so a query finds services by their words, not in other languages)');
  return result(
    services,
    table(
      services.map((s) => ({
        service: s.service,
        price: `${priceOf(s)} USDC`,
        calls: s.totalCalls,
        health: healthText(s.health),
        description: s.description.length > 70 ? `${s.description.slice(0, 69)}…` : s.description,
      })),
      ['service', 'price', 'calls', 'health', 'description'],
    ),
  );
}

/** A service's health in a few words: `ok 99.7% p50 41ms` over the judged window, `new` without enough calls. */
export function healthText(h: GatewayService['health'] | undefined): string {
  if (!h || h.status === 'new') return 'new';
  const w = h.windows['24h'].calls >= 10 ? h.windows['24h'] : h.windows['7d'];
  const rate = w.success_rate === null ? '' : ` ${(Math.floor(w.success_rate * 1000) / 10).toString()}%`;
  return `${h.status}${rate}${w.p50_ms === null ? '' : ` p50 ${w.p50_ms}ms`}`;
}

/** The payload: the argument, else `--file` (`-` is stdin), else stdin when it is not a terminal, else `{}`. */
export async function readPayload(
  arg: string | undefined,
  file: string | undefined,
  stdin: NodeJS.ReadableStream & { isTTY?: boolean } = process.stdin,
): Promise<Record<string, unknown>> {
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
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new CliError('USAGE', `${from} must be a JSON object (the service's input), e.g. '{"text":"hi"}'`);
  return value as Record<string, unknown>;
}

export async function runCall(
  ctx: Context,
  service: string,
  payload: Record<string, unknown>,
  opts: { maxCost?: string; idempotencyKey?: string } = {},
): Promise<CommandResult> {
  const gw = await ctx.gateway();
  // One Idempotency-Key per call (given, or made here): the client asks again under it after a lost answer, so it is charged at most once.
  const key = opts.idempotencyKey ?? randomUUID();
  let r: Awaited<ReturnType<typeof gw.call>>;
  try {
    r = await gatewayCall(() => gw.call(service, payload, { ...(opts.maxCost ? { maxCost: opts.maxCost } : {}), idempotencyKey: key }));
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    // No answer, or one still in progress: the same key finds out what became of the call without paying twice.
    const unknown = e.data.code === 'NETWORK' || (e.data.status === 409 && /in progress/.test(e.message));
    const check = `farebox call ${shellWord(service)} ${shellWord(JSON.stringify(payload))} --idempotency-key ${shellWord(key)}`;
    throw new CliError(e.code, unknown ? `${e.message}. To see what became of this call without paying twice, run: ${check}` : e.message, {
      ...e.data,
      idempotencyKey: key,
    });
  }
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

/** `--max-cost` in base units for a channel call (a USD amount, as for credit calls). */
function maxCostUnits(text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined;
  try {
    return parseAmount(text);
  } catch {
    throw new CliError('USAGE', '--max-cost must be a USD amount, e.g. --max-cost 0.01');
  }
}

/** An argument as a POSIX shell reads it back: bare when it is safe, else single-quoted. */
const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

/**
 * What the user reads when a direct call fails: nothing offered can be paid
 * (said before any escrow exists), or, once money sits in an escrow, its id and
 * the one command that gets it back.
 */
function directCallError(e: ClientError, ctx: Context, service: string, keypair: string): CliError {
  if (e.code === 'NO_DIRECT_PAYMENT') {
    const gatewayOnly = e.data.payments?.includes('platform') === true;
    return new CliError(
      'GATEWAY',
      gatewayOnly
        ? `${service} takes no direct payment: it is paid through the gateway only; drop --direct to pay from your credits (nothing was paid)`
        : e.message,
      { code: e.code },
    );
  }
  const escrowId = e.data.escrowId;
  if (escrowId === undefined || e.data.lockedBaseUnits === undefined) return new CliError('GATEWAY', e.message, { code: e.code, ...e.data });
  const command = [
    'farebox',
    'dispute',
    escrowId,
    '--keypair',
    shellWord(keypair),
    ...(ctx.url !== DEFAULT_GATEWAY_URL ? ['--url', shellWord(ctx.url)] : []),
  ].join(' ');
  const amount = formatAmount(BigInt(e.data.lockedBaseUnits), { trim: true });
  const holds = e.code === 'PAYMENT_REFUSED' || e.code === 'SERVICE' ? 'still holds' : 'may still hold';
  // No HTTP status in the data: the error line would end with it, after the command to copy.
  return new CliError('GATEWAY', `${e.data.reason ?? e.message}\nescrow ${escrowId} ${holds} ${amount} USDC; get it back with:\n  ${command}`, {
    code: e.code,
    escrowId,
  });
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
  // Needed only when the service offers no x402 exact payment on this network (the client then pays through an escrow).
  const escrowKey = opts.escrowKey ?? ctx.settings.escrowApiKey ?? (network === 'local' ? 'farebox-cli' : undefined);
  const client = (() => {
    try {
      return createClient({
        network: network === 'local' || network === 'mainnet' ? network : 'testnet',
        ...(network === 'local' && typeof platform.horizonUrl === 'string' ? { devnetUrl: platform.horizonUrl } : {}),
        ...(typeof platform.registryContractId === 'string' ? { contractId: platform.registryContractId } : {}),
        secret,
        ...(escrowKey ? { escrow: { apiKey: escrowKey } } : {}),
        platformAddress: platform.treasury,
        // The gateway's devnet may stand in for testnet (its passphrase): exact payments then run on stellar:testnet.
        env: network === 'local' && typeof platform.passphrase === 'string' ? { FAREBOX_DEVNET_PASSPHRASE: platform.passphrase } : {},
      });
    } catch (e) {
      throw new CliError('USAGE', (e as Error).message);
    }
  })();
  const r = await gatewayCall(() =>
    client
      .call(service, payload, {
        ...(opts.maxCost ? { maxCost: opts.maxCost } : {}),
        onProgress: (e) => {
          opts.onProgress?.(e);
          const where = e.explorerUrl ? ` ${e.explorerUrl}` : e.escrowId ? ` escrow ${e.escrowId}` : '';
          if (e.phase === 'done') ctx.log(`  ✓ ${STEP_LABEL[e.step]} (${(e.elapsedMs / 1000).toFixed(1)} s)${where}`);
          // Why it failed is the command's error, the last line.
          else if (e.phase === 'failed') ctx.log(`  ✗ ${STEP_LABEL[e.step]}`);
          else ctx.log(`  … ${STEP_LABEL[e.step]}`);
        },
      })
      .catch((e: unknown) => {
        throw e instanceof ClientError ? directCallError(e, ctx, service, opts.keypair) : e;
      }),
  );
  const human = [
    JSON.stringify(r.result, null, 2),
    '',
    pairs([
      ['cost', `${r.cost.usdc} USDC (${usd(r.cost.usd)}) from ${client.payer}`],
      ['paid with', r.scheme],
      ['escrow', r.escrowId],
      [r.scheme === 'exact' ? 'transaction' : 'release', r.releaseTx],
      ['explorer', r.explorerUrl],
    ]),
  ].join('\n');
  return result({ ...r, payer: client.payer }, human);
}

export const catalogCommands: CommandGroup = {
  name: 'catalog',
  register(program, { act, stdin }) {
    program
      .command('search [query]')
      .description('search the catalog (free text, any language); without a query, list every service')
      .option('--discovery <url>', 'ask this discovery backend instead of the gateway (no account needed)')
      .option('--limit <n>', 'at most this many results')
      .action((query: string | undefined, o: { discovery?: string; limit?: string }) =>
        act((ctx) => (o.discovery !== undefined ? runDiscoverySearch(ctx, query, o.discovery, o) : runSearch(ctx, query, o)))(),
      );
    program
      .command('call <service> [payload]')
      .description('call a service; the payload (a JSON object) comes from the argument, --file, or stdin')
      .option('-f, --file <path>', 'read the payload from a file (- for stdin)')
      .option('--max-cost <usd>', 'refuse to pay more than this')
      .option('--idempotency-key <key>', 'retry-safe key: a retry with it is charged once')
      .option('--direct', 'pay directly from a local keypair (not from credits): x402 exact where the service offers it, else an on-chain escrow')
      .option('--keypair <path>', 'the payer keypair file for --direct (S... seed or JSON with "secret")')
      .option('--escrow-key <key>', 'escrow provider API key for --direct when it pays through an escrow (default TRUSTLESS_WORK_API_KEY)')
      .option('--channel [channel]', 'pay from an MPP channel opened with `farebox channel open` (no account)')
      .action(
        (
          service: string,
          payloadArg: string | undefined,
          o: { file?: string; maxCost?: string; idempotencyKey?: string; direct?: boolean; keypair?: string; escrowKey?: string; channel?: string | boolean },
        ) =>
          act(async (ctx) => {
            const payload = await readPayload(payloadArg, o.file, stdin);
            if (o.channel !== undefined) {
              if (o.direct || o.keypair || o.idempotencyKey)
                throw new CliError('USAGE', '--channel pays from the channel alone: drop --direct, --keypair and --idempotency-key');
              return runChannelCall(ctx, service, payload, typeof o.channel === 'string' ? o.channel : undefined, maxCostUnits(o.maxCost));
            }
            if (o.direct) {
              if (!o.keypair) throw new CliError('USAGE', '--direct needs --keypair <path>');
              return runDirectCall(ctx, service, payload, {
                keypair: o.keypair,
                ...(o.maxCost ? { maxCost: o.maxCost } : {}),
                ...(o.escrowKey ? { escrowKey: o.escrowKey } : {}),
              });
            }
            if (o.keypair) throw new CliError('USAGE', '--keypair is for --direct calls');
            return runCall(ctx, service, payload, o);
          })(),
      );
  },
};
