import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ClientError, createChannelPayer, type ChannelCounter } from '@farebox/client';
import { writeFileAtomic } from '@farebox/protocol/files';
import { createEd25519Signer, decodeStrKey, encodeStrKey, formatAmount, parseAmount } from '@farebox/protocol';
import { channelInvoke, keypairSigner, LOCAL_CHANNEL_FACTORY_ID, openChannel, readChannelState, rpcServer, type NetworkConfig } from '@farebox/stellar';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { pairs } from '../format.js';
import { gatewayCall, readKeypair, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox channel open | status | top-up | close` and `farebox call --channel`: pay the catalog from an MPP
// channel with no account (docs/protocol.md, "MPP channel sessions"). A channel's commitment key and this
// machine's count of its cumulative amount live in <config>/channels/<C...>.json (mode 0600).

interface ChannelFile {
  channel: string;
  gateway: string;
  funder: string;
  commitmentSecret: string;
  cumulativeAmount: string;
}

const usdcText = (units: bigint) =>
  `${formatAmount(units)
    .replace(/(\.\d*?)0+$/, '$1')
    .replace(/\.$/, '')} USDC`;

function amountOption(text: string | undefined, flag: string): bigint {
  if (text === undefined) throw new CliError('USAGE', `${flag} required: USDC as a decimal, e.g. ${flag} 5`);
  try {
    const v = parseAmount(text);
    if (v <= 0n) throw new Error('not positive');
    return v;
  } catch {
    throw new CliError('USAGE', `${flag} must be a USDC amount as a decimal, e.g. ${flag} 5 or ${flag} 0.25`);
  }
}

async function platform(ctx: Context) {
  const key = await gatewayCall(() => ctx.anonymous().platform.key());
  if (!key.usdc.contractId) throw new CliError('GATEWAY', 'the gateway names no USDC contract: channel sessions need one');
  const network: NetworkConfig = {
    name: key.network as NetworkConfig['name'],
    passphrase: key.passphrase,
    rpcUrl: key.rpcUrl,
    horizonUrl: key.horizonUrl,
    friendbotUrl: key.friendbotUrl ?? undefined,
    allowHttp: key.rpcUrl.startsWith('http:'),
    usdc: { code: 'USDC', issuer: key.usdc.issuer, contractId: key.usdc.contractId },
  } as NetworkConfig;
  return { key, network, server: rpcServer(network) };
}

const channelsDir = (ctx: Context) => join(ctx.dir, 'channels');

async function loadChannel(ctx: Context, id: string | undefined): Promise<ChannelFile> {
  let chosen = id;
  if (!chosen) {
    const files = (await readdir(channelsDir(ctx)).catch(() => [] as string[])).filter((f) => f.endsWith('.json'));
    if (files.length !== 1)
      throw new CliError(
        'USAGE',
        files.length === 0 ? 'no channel here: open one with `farebox channel open --amount 5 --keypair <file>`' : 'several channels here: name one',
      );
    chosen = files[0]!.slice(0, -5);
  }
  try {
    return JSON.parse(await readFile(join(channelsDir(ctx), `${chosen}.json`), 'utf8')) as ChannelFile;
  } catch {
    throw new CliError('USAGE', `no channel ${chosen} here (farebox channel open makes one)`);
  }
}

async function saveChannel(ctx: Context, file: ChannelFile): Promise<void> {
  await mkdir(channelsDir(ctx), { recursive: true, mode: 0o700 });
  await writeFileAtomic(join(channelsDir(ctx), `${file.channel}.json`), `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
}

export async function runChannelOpen(ctx: Context, o: { amount?: string; keypair?: string; waitingPeriod?: string; factory?: string }): Promise<CommandResult> {
  const amount = amountOption(o.amount, '--amount');
  if (!o.keypair) throw new CliError('USAGE', '--keypair required: the Stellar keypair file whose USDC funds the channel (S... secret)');
  const period = o.waitingPeriod === undefined ? 720 : /^\d{1,7}$/.test(o.waitingPeriod) ? Number(o.waitingPeriod) : Number.NaN;
  if (!Number.isInteger(period) || period < 1) throw new CliError('USAGE', '--waiting-period must be a whole number of ledgers (default 720, about an hour)');
  const funder = keypairSigner(await readKeypair(o.keypair));
  const { key, network, server } = await platform(ctx);
  const factory = o.factory ?? (key.network === 'local' ? LOCAL_CHANNEL_FACTORY_ID : undefined);
  if (!factory) throw new CliError('USAGE', `--factory required on ${key.network}: the one-way channel factory contract (C...)`);
  // A commitment key of its own: it signs vouchers only, never a transaction.
  const commitmentSecret = encodeStrKey('secretSeed', randomBytes(32));
  const commitmentPublic = decodeStrKey('publicKey', (await createEd25519Signer(commitmentSecret)).publicKey);
  const opened = await openChannel(server, network, funder, {
    factory,
    token: network.usdc.contractId,
    recipient: key.treasury,
    commitmentKey: commitmentPublic,
    amount,
    refundWaitingPeriod: period,
  }).catch((e: Error) => {
    throw new CliError('GATEWAY', `the channel was not opened (nothing moved): ${e.message}`);
  });
  await saveChannel(ctx, { channel: opened.channel, gateway: ctx.url, funder: funder.publicKey, commitmentSecret, cumulativeAmount: '0' });
  return result(
    { channel: opened.channel, txHash: opened.txHash, deposit: amount.toString(), recipient: key.treasury },
    `Opened channel ${opened.channel} with ${usdcText(amount)} to ${key.treasury} (transaction ${opened.txHash}).\nPay with it: farebox call <service> '<json>' --channel`,
  );
}

export async function runChannelStatus(ctx: Context, id: string | undefined): Promise<CommandResult> {
  const file = await loadChannel(ctx, id);
  const { network, server } = await platform(ctx);
  const s = await readChannelState(server, network, file.channel);
  const paid = BigInt(file.cumulativeAmount);
  const data = {
    channel: file.channel,
    deposited: s.deposited.toString(),
    paid: paid.toString(),
    withdrawn: s.withdrawn.toString(),
    balance: s.balance.toString(),
    left: (s.deposited - paid).toString(),
    closeEffectiveAtLedger: s.closeEffectiveAtLedger,
    latestLedger: s.latestLedger,
  };
  return result(
    data,
    pairs([
      ['channel', file.channel],
      ['deposited', usdcText(s.deposited)],
      ['paid (this machine)', usdcText(paid)],
      ['left to spend', usdcText(s.deposited - paid)],
      ['withdrawn by the treasury', usdcText(s.withdrawn)],
      ['closing', s.closeEffectiveAtLedger === null ? 'no' : `effective at ledger ${s.closeEffectiveAtLedger} (now ${s.latestLedger})`],
    ]),
  );
}

export async function runChannelTopUp(ctx: Context, id: string | undefined, o: { amount?: string; keypair?: string }): Promise<CommandResult> {
  const amount = amountOption(o.amount, '--amount');
  if (!o.keypair) throw new CliError('USAGE', "--keypair required: the channel's funder keypair file");
  const file = await loadChannel(ctx, id);
  const { network, server } = await platform(ctx);
  const { txHash } = await channelInvoke(server, network, keypairSigner(await readKeypair(o.keypair)), file.channel, { fn: 'top_up', amount });
  return result({ channel: file.channel, txHash, amount: amount.toString() }, `Added ${usdcText(amount)} to ${file.channel} (transaction ${txHash}).`);
}

export async function runChannelClose(ctx: Context, id: string | undefined, o: { keypair?: string }): Promise<CommandResult> {
  if (!o.keypair) throw new CliError('USAGE', "--keypair required: the channel's funder keypair file");
  const file = await loadChannel(ctx, id);
  const { network, server } = await platform(ctx);
  const { txHash } = await channelInvoke(server, network, keypairSigner(await readKeypair(o.keypair)), file.channel, { fn: 'close_start' });
  return result(
    { channel: file.channel, txHash },
    `Closing ${file.channel} (transaction ${txHash}): the gateway's treasury withdraws what was paid and the rest comes back to ${file.funder}.`,
  );
}

/** `farebox call <service> --channel [C...]`: one call paid from the channel, its count kept in the channel's file. */
export async function runChannelCall(
  ctx: Context,
  service: string,
  payload: Record<string, unknown>,
  id: string | undefined,
  maxCost?: bigint,
): Promise<CommandResult> {
  const file = await loadChannel(ctx, id);
  const { key } = await platform(ctx);
  const counter: ChannelCounter = {
    get: async () => BigInt((await loadChannel(ctx, file.channel)).cumulativeAmount),
    set: async (n) => saveChannel(ctx, { ...(await loadChannel(ctx, file.channel)), cumulativeAmount: n.toString() }),
  };
  const payer = createChannelPayer({
    baseUrl: ctx.url,
    channel: file.channel,
    commitmentSecret: file.commitmentSecret,
    networkPassphrase: key.passphrase,
    counter,
  });
  try {
    const r = await payer.call(service, payload, maxCost === undefined ? {} : { maxCost });
    return result(
      { result: r.result, callId: r.callId, cost: r.price.toString(), channel: file.channel, cumulativeAmount: r.cumulativeAmount.toString() },
      `${JSON.stringify(r.result, null, 2)}\n(paid ${usdcText(r.price)} from channel ${file.channel}; ${usdcText(r.cumulativeAmount)} paid from it in all)`,
    );
  } catch (e) {
    if (e instanceof ClientError) throw new CliError('GATEWAY', e.message, { status: e.data.status, code: e.code });
    throw e;
  }
}

export const channelCommands: CommandGroup = {
  name: 'channel',
  register(program, { act }) {
    const ch = program.command('channel').description('pay the catalog from an MPP payment channel, without an account (docs/protocol.md)');
    ch.command('open')
      .description("open a channel to the gateway's treasury, funded from a keypair's USDC")
      .option('--amount <usdc>', 'the deposit, USDC')
      .option('--keypair <file>', "the funder's Stellar keypair file (S... secret)")
      .option('--waiting-period <ledgers>', 'ledgers between your close and your refund (default 720)')
      .option('--factory <C...>', 'the channel factory contract (default on the local network: the devnet)')
      .action((o: { amount?: string; keypair?: string; waitingPeriod?: string; factory?: string }) => act((ctx) => runChannelOpen(ctx, o))());
    ch.command('status [channel]')
      .description('deposit, paid, left and withdrawn')
      .action((id?: string) => act((ctx) => runChannelStatus(ctx, id))());
    ch.command('top-up [channel]')
      .description('add USDC to the channel')
      .option('--amount <usdc>', 'USDC to add')
      .option('--keypair <file>', "the funder's keypair file")
      .action((id: string | undefined, o: { amount?: string; keypair?: string }) => act((ctx) => runChannelTopUp(ctx, id, o))());
    ch.command('close [channel]')
      .description('start closing: the treasury withdraws what was paid, the rest comes back to you')
      .option('--keypair <file>', "the funder's keypair file")
      .action((id: string | undefined, o: { keypair?: string }) => act((ctx) => runChannelClose(ctx, id, o))());
  },
};
