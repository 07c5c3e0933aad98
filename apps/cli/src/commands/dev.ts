import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import type { CommandGroup } from './shared.js';

// `farebox dev`: the local stack.

/**
 * How `farebox dev` starts the local stack: inside a Farebox checkout, the
 * repository's `npm start` script (gateway, examples, demo account);
 * elsewhere the `farebox-gateway` binary (`@farebox/gateway`) from the
 * project's node_modules or the PATH. The CLI spawns it instead of importing
 * the gateway: the gateway is an app with a database and a devnet, the CLI
 * stays a thin client.
 */
export function devCommand(cwd: string, path: string): { command: string; args: string[]; description: string } | undefined {
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const start = join(dir, 'scripts', 'start.mjs');
    const pkg = join(dir, 'package.json');
    if (existsSync(start) && existsSync(pkg) && existsSync(join(dir, 'apps', 'gateway')))
      return { command: process.execPath, args: [start], description: `npm start in ${dir}` };
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
  for (const p of path.split(process.platform === 'win32' ? ';' : ':')) {
    const bin = join(p, process.platform === 'win32' ? 'farebox-gateway.cmd' : 'farebox-gateway');
    if (p && existsSync(bin)) return { command: bin, args: [], description: bin };
  }
  return undefined;
}

const LOCAL_PASSPHRASE = 'Standalone Network ; February 2017';

/**
 * The passphrase the local stack's devnet runs under, as `npm start` picks it: `testnet` (the devnet stands in for
 * Stellar testnet, so stock x402 clients pay `exact`), unless FAREBOX_DEVNET_PASSPHRASE says otherwise or the data
 * folder holds a devnet made under the local passphrase (its accounts and contracts belong to that network), which
 * keeps `local`. Undefined off the local network.
 */
export function devnetPassphraseFor(devnet: { passphrase: string | undefined; local: boolean }, dataDir: string): string | undefined {
  if (devnet.passphrase !== undefined) return devnet.passphrase;
  if (!devnet.local) return undefined;
  try {
    const state = JSON.parse(readFileSync(join(dataDir, 'devnet', 'state.json'), 'utf8')) as { passphrase?: string };
    if ((state.passphrase ?? LOCAL_PASSPHRASE) === LOCAL_PASSPHRASE) return 'local';
  } catch {
    // No devnet there yet: a fresh one.
  }
  return 'testnet';
}

/** Runs the local stack in the foreground until Ctrl-C; resolves with its exit code. */
export async function runDev(ctx: Context, opts: { port?: string; cwd?: string }): Promise<number> {
  const found = devCommand(opts.cwd ?? process.cwd(), ctx.settings.path);
  if (!found) {
    throw new CliError(
      'LOCAL',
      'cannot find the Farebox gateway: run `farebox dev` inside a Farebox checkout (it runs `npm start`), or install the gateway so `farebox-gateway` is on the PATH',
    );
  }
  if (opts.port !== undefined && !/^\d{1,5}$/.test(opts.port)) throw new CliError('USAGE', '--port must be a port number');
  ctx.log(`Starting the local stack (${found.description})...`);
  // The CLI's environment with the local stack's defaults: the local network, loopback endpoints allowed (context.ts, devStackEnv).
  // `npm start` picks its devnet's passphrase itself (scripts/start.mjs, its own data folder); the gateway binary gets it here.
  const viaStartScript = found.args[0]?.endsWith('start.mjs') === true;
  const passphrase = viaStartScript ? undefined : devnetPassphraseFor(ctx.settings.devnet, resolve(opts.cwd ?? process.cwd(), ctx.settings.dataDir));
  const env = {
    ...ctx.settings.devStackEnv,
    ...(passphrase !== undefined ? { FAREBOX_DEVNET_PASSPHRASE: passphrase } : {}),
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

export const devCommands: CommandGroup = {
  name: 'dev',
  register(program, { run }) {
    program
      .command('dev')
      .description('start the local stack (gateway + devnet): `npm start` in a Farebox checkout, else farebox-gateway')
      .option('--port <port>', 'gateway port (default 8787)')
      .action((o: { port?: string }) => run((ctx) => runDev(ctx, o))());
  },
};
