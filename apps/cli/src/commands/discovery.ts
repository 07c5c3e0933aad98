import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { ClientError, createDiscoveryClient, type DiscoveryHit } from '@farebox/client';
import { formatAmount } from '@farebox/protocol';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { table } from '../format.js';
import type { CommandGroup, CommandResult } from './shared.js';

const short = (s: string) => (s.length > 70 ? `${s.slice(0, 69)}…` : s);

/** `farebox search <query> --discovery <url>`: search a discovery backend, no account needed. */
export async function runDiscoverySearch(_ctx: Context, query: string | undefined, url: string, opts: { limit?: string } = {}): Promise<CommandResult> {
  let discovery;
  try {
    discovery = createDiscoveryClient({ url, env: {} });
  } catch (e) {
    throw new CliError('USAGE', e instanceof Error ? e.message.replace('createDiscoveryClient: url', '--discovery') : String(e));
  }
  let limit: number | undefined;
  if (opts.limit !== undefined) {
    if (!/^\d{1,4}$/.test(opts.limit)) throw new CliError('USAGE', '--limit must be a whole number');
    limit = Number(opts.limit);
  }
  try {
    if (query === undefined || query.trim() === '') {
      const services = limit !== undefined ? (await discovery.listServices({ limit })).services : await discovery.listAllServices();
      return {
        data: services,
        human: table(
          services.map((s) => ({
            service: s.service,
            price: `${formatAmount(s.pricePerCallBaseUnits, { trim: true })} USDC`,
            description: short(s.description),
          })),
          ['service', 'price', 'description'],
        ),
      };
    }
    const found = await discovery.search(query, limit !== undefined ? { limit } : {});
    const row = (h: DiscoveryHit) => ({
      service: h.service,
      score: h.score.toFixed(3),
      price: `${formatAmount(h.agent.pricePerCallBaseUnits, { trim: true })} USDC`,
      description: short(h.agent.description),
    });
    const human = table(found.results.map(row), ['service', 'score', 'price', 'description']);
    return { data: found, human: found.mode === 'hybrid' ? human : `${human}\n(${found.mode} search: the backend has no embedding model)` };
  } catch (e) {
    if (e instanceof ClientError) throw new CliError('GATEWAY', e.message, { ...(e.data.status !== undefined ? { status: e.data.status } : {}) });
    throw e;
  }
}

/**
 * Where `farebox discovery` finds the `farebox-discovery` binary: the
 * checkout's apps/discovery build, the project's node_modules, or the PATH.
 * Spawned, not imported: the discovery backend is an app of its own.
 */
export function discoveryCommand(cwd: string, path: string): { command: string; args: string[]; description: string } | undefined {
  const name = process.platform === 'win32' ? 'farebox-discovery.cmd' : 'farebox-discovery';
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    const built = join(dir, 'apps', 'discovery', 'dist', 'main.js');
    if (existsSync(built)) return { command: process.execPath, args: [built], description: built };
    const bin = join(dir, 'node_modules', '.bin', name);
    if (existsSync(bin)) return { command: bin, args: [], description: bin };
    if (dirname(dir) === dir) break;
  }
  try {
    const main = join(dirname(createRequire(join(resolve(cwd), 'noop.js')).resolve('@farebox/discovery-service/package.json')), 'dist', 'main.js');
    if (existsSync(main)) return { command: process.execPath, args: [main], description: main };
  } catch {
    // not installed here
  }
  for (const p of path.split(process.platform === 'win32' ? ';' : ':')) {
    if (p && existsSync(join(p, name))) return { command: join(p, name), args: [], description: join(p, name) };
  }
  return undefined;
}

/** `farebox discovery`: runs a discovery backend in the foreground until Ctrl-C. */
export async function runDiscoveryServer(ctx: Context, opts: { port?: string; dataDir?: string; cwd?: string }): Promise<CommandResult> {
  const found = discoveryCommand(opts.cwd ?? process.cwd(), ctx.settings.path);
  if (!found) {
    throw new CliError(
      'LOCAL',
      'cannot find the discovery backend: run `pnpm build` in a Farebox checkout, or install it so `farebox-discovery` is on the PATH',
    );
  }
  if (opts.port !== undefined && !/^\d{1,5}$/.test(opts.port)) throw new CliError('USAGE', '--port must be a port number');
  ctx.log(`Starting the discovery backend (${found.description})...`);
  const env = { ...ctx.settings.childEnv, ...(opts.port ? { PORT: opts.port } : {}), ...(opts.dataDir ? { FAREBOX_DISCOVERY_DATA_DIR: opts.dataDir } : {}) };
  const child = spawn(found.command, found.args, { stdio: 'inherit', env });
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
  process.on('SIGINT', forward('SIGINT'));
  process.on('SIGTERM', forward('SIGTERM'));
  const code = await new Promise<number>((done) => {
    child.on('error', (e) => {
      ctx.log(`cannot start ${found.description}: ${e.message}`);
      done(1);
    });
    child.on('exit', (c, signal) => done(c ?? (signal ? 0 : 1)));
  });
  if (code !== 0) throw new CliError('LOCAL', `farebox-discovery exited with code ${code}`);
  return { data: { stopped: true }, human: 'discovery backend stopped' };
}

/** `farebox discovery` (`search --discovery` is in the catalog group, next to `search`). */
export const discoveryCommands: CommandGroup = {
  name: 'discovery',
  register(program, { act }) {
    program
      .command('discovery')
      .description('run a discovery backend (farebox-discovery): follows the registry, serves search to anyone; settings from the environment (docs/deploy.md)')
      .option('--port <port>', 'listening port (default PORT or 8790)')
      .option('--data-dir <path>', 'snapshots and cursor (default FAREBOX_DISCOVERY_DATA_DIR)')
      .action((o: { port?: string; dataDir?: string }) => act((ctx) => runDiscoveryServer(ctx, o))());
  },
};
