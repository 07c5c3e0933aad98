import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { writeFileAtomic } from '@farebox/client/oauth';
import { encodeStrKey } from '@farebox/protocol';
import { createAccounts, keypairSigner, resolveNetwork } from '@farebox/stellar';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { gatewayCall, readKeypair, result, type CommandGroup, type CommandResult } from './shared.js';

// `farebox devnet fund | keypair`: helpers for the local network.

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
  return result(
    { address, usdc: opts.usdc ?? null, network: platform.network, friendbot: body },
    `Funded ${address} on ${String(platform.network)}${opts.usdc ? ` with ${opts.usdc} USDC` : ''}.`,
  );
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
  if (platform.network !== 'local')
    throw new CliError('USAGE', `devnet keypair works on the local devnet only (this gateway is on ${String(platform.network)})`);
  const net = resolveNetwork({
    network: 'local',
    devnetUrl: String(platform.horizonUrl),
    ...(typeof platform.registryContractId === 'string' ? { contractId: platform.registryContractId } : {}),
    ...(typeof platform.passphrase === 'string' ? { passphrase: platform.passphrase } : {}),
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

export const devnetCommands: CommandGroup = {
  name: 'devnet',
  register(program, { act }) {
    const devnet = program.command('devnet').description('local devnet helpers');
    devnet
      .command('fund <address>')
      .description('fund an address with the friendbot (XLM; --usdc needs a USDC trustline)')
      .option('--usdc <n>', 'also pay this much USDC')
      .action((address: string, o: { usdc?: string }) => act((ctx) => runDevnetFund(ctx, address, o))());
    devnet
      .command('keypair <path>')
      .description('create (or reuse) a payer keypair file: funded, USDC trustline set, optional USDC; ready for call --direct')
      .option('--usdc <n>', 'pay it this much USDC')
      .action((path: string, o: { usdc?: string }) => act((ctx) => runDevnetKeypair(ctx, path, o))());
  },
};
