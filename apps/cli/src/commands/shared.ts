import { readFile, stat } from 'node:fs/promises';
import type { Command } from 'commander';
import { GatewayApiError, ClientError } from '@farebox/client';
import { formatAmount } from '@farebox/protocol';
import { keypairSigner } from '@farebox/stellar';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';

/** What every command returns: the data (`--json`) and its human rendering. */
export interface CommandResult<T = unknown> {
  data: T;
  human: string;
}

export const result = <T>(data: T, human: string): CommandResult<T> => ({ data, human });

/** What a command group gets from the program to define its actions. */
export interface Cli {
  /** An action that prints a {@link CommandResult} (human text, or JSON with `--json`) and sets the exit code. */
  act<A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<CommandResult>): (...args: A) => Promise<void>;
  /** An action that runs for its exit code and prints nothing itself (`dev`). */
  run<A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<number>): (...args: A) => Promise<void>;
  /** Where payloads are read from when none is given. */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** One group of commands (one file in this folder): it adds its commands to the program. */
export interface CommandGroup {
  name: string;
  register(program: Command, cli: Cli): void;
}

/** A catalog entry's price in USDC, exact from its base units. */
export const priceOf = (s: { pricePerCall: number; [k: string]: unknown }) =>
  typeof s.pricePerCallBaseUnits === 'number'
    ? formatAmount(BigInt(s.pricePerCallBaseUnits))
        .replace(/(\.\d*?)0+$/, '$1')
        .replace(/\.$/, '')
    : String(s.pricePerCall);

/** What to do about `invalid credential` (an API key the gateway does not know: revoked, mistyped, or another gateway's). */
export const INVALID_CREDENTIAL_HINT =
  'the gateway does not know this API key (revoked, mistyped, or made on another gateway: check --url / FAREBOX_URL); sign in again with `farebox login --api-key sk_live_...` (a key from the dashboard or `farebox keys create`), or fix --api-key / FAREBOX_API_KEY';

/** Turns client errors into CLI errors with the gateway's own message. */
export async function gatewayCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof GatewayApiError) {
      const hint =
        e.status === 403 && /OAuth access token/.test(e.message)
          ? ' (signed in through the browser: this needs `farebox login --api-key`)'
          : e.status === 401 && e.message === 'invalid credential'
            ? `: ${INVALID_CREDENTIAL_HINT}`
            : '';
      throw new CliError('GATEWAY', `${e.message}${hint}`, {
        status: e.status,
        body: e.body,
        // The gateway's answer ({ error, code, ...details }), what `--json` prints.
        answer: e.answer,
        ...(e.requestId ? { requestId: e.requestId } : {}),
        // A refusal by the key's or connection's spending policy: whose, the limit, what is left, when it resets.
        ...(e.spendingLimit ? { spendingLimit: e.spendingLimit } : {}),
      });
    }
    if (e instanceof ClientError) throw new CliError('GATEWAY', e.message, { code: e.code, ...e.data });
    throw e;
  }
}

/** A note on a wallet that cannot take USDC yet, or whose balance is not known. */
export function walletNote(status: string | undefined): string | undefined {
  if (status === 'provisioning') return 'still being set up on chain (account and USDC trustline): wait a moment before sending USDC to it';
  if (status === 'unavailable') return 'the settlement network did not answer: the wallet balance may be out of date';
  return undefined;
}

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

export async function fileExists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
