// `farebox init`: scaffold a paid service from the template.
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { serviceNameProblem } from '@farebox/protocol';
import { priceUnits } from './publisher.js';
import type { CommandGroup, CommandResult } from './shared.js';
import { resolveTarballs, TARBALLS_DIR, useTarballs, type Tarballs } from './init-tarballs.js';
import type { Env } from '../context.js';
import { CliError } from '../errors.js';

/** The templates folder, next to `dist/` in the package (and to `src/` in the repo). */
function templatesDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const candidate of [join(here, '..', 'templates'), join(here, '..', '..', 'templates')]) if (existsSync(candidate)) return candidate;
  throw new CliError('LOCAL', 'the service template is missing from this installation of @farebox/cli');
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(p)));
    else out.push(p);
  }
  return out;
}

export interface InitOptions {
  name?: string;
  price?: string;
  description?: string;
  /**
   * Install @farebox/* from `pnpm pack` tarballs copied into the scaffold
   * (`farebox-packages/`) instead of the npm registry: `true` packs them from
   * the checkout this CLI runs from, a string takes them from that folder.
   */
  tarballs?: string | true;
}

/**
 * Scaffolds a paid service from the template into `dir` (which must be empty
 * or missing): package.json, src/index.ts, README.md, tsconfig.json, .gitignore
 * (and with `tarballs`, `farebox-packages/` with the tarballs it installs).
 */
export async function runInit(dir: string, opts: InitOptions, env: Env = {}): Promise<CommandResult> {
  const target = resolve(dir);
  // The folder's name made into a service name (the one policy of @farebox/protocol): `My_Cool.Service` -> `my-cool-service`.
  const name =
    opts.name ??
    basename(target)
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+/, '')
      .slice(0, 32)
      .replace(/-+$/, '');
  const problem = serviceNameProblem(name);
  if (problem) throw new CliError('USAGE', `${problem} (got ${JSON.stringify(name)}; use --name)`);
  const price = opts.price ?? '0.001';
  priceUnits(price, undefined, "set maxPricePerCall: '{}' next to pricePerCall in the scaffold's src/index.ts");
  const description = (opts.description ?? 'Reverses a text. Input: {"text": string}. Output: {"reversed": string, "length": number}.').replace(/["\\]/g, '');
  if (existsSync(target)) {
    if (!(await stat(target)).isDirectory()) throw new CliError('USAGE', `${target} exists and is not a folder`);
    if ((await readdir(target)).length > 0) throw new CliError('USAGE', `${target} is not empty: pick a new folder`);
  }
  const source = templatesDir();
  const files = (await listFiles(join(source, 'service'))).sort();
  // The tarballs first: a missing one (or a failed pack) refuses the command before anything is written.
  const tarballs: Tarballs | undefined = opts.tarballs === undefined ? undefined : await resolveTarballs(opts.tarballs, env);
  try {
    return await scaffold(target, files, source, { name, price, description }, tarballs);
  } finally {
    if (tarballs?.cleanup) await rm(tarballs.cleanup, { recursive: true, force: true });
  }
}

async function scaffold(
  target: string,
  files: string[],
  source: string,
  { name, price, description }: { name: string; price: string; description: string },
  tarballs: Tarballs | undefined,
): Promise<CommandResult> {
  const written: string[] = [];
  for (const file of files) {
    const rel = relative(join(source, 'service'), file)
      .split(/[\\/]/)
      .map((part) => (part.startsWith('_') ? part.replace(/^_package\.json$/, 'package.json').replace(/^_gitignore$/, '.gitignore') : part))
      .join('/');
    let text = (await readFile(file, 'utf8')).replaceAll('__SERVICE__', name).replaceAll('__PRICE__', price).replaceAll('__DESCRIPTION__', description);
    const out = join(target, rel);
    await mkdir(dirname(out), { recursive: true });
    if (rel === 'package.json' && tarballs) text = await useTarballs(target, text, tarballs);
    await writeFile(out, text, { flag: 'wx' });
    written.push(rel);
  }
  if (tarballs) for (const file of tarballs.files.values()) written.push(`${TARBALLS_DIR}/${file}`);
  written.sort();
  return {
    data: { dir: target, service: name, price, files: written, ...(tarballs ? { tarballs: Object.fromEntries(tarballs.files) } : {}) },
    human: [
      `Created the paid service "${name}" (${price} USDC per call) in ${target}:`,
      ...written.map((f) => `  ${f}`),
      ...(tarballs
        ? ['', `npm install takes ${[...tarballs.files.keys()].join(', ')} from ${TARBALLS_DIR}/ (packed from ${tarballs.source}).`]
        : [
            '',
            'npm install takes @farebox/provider from the npm registry: until it is published there, make the scaffold',
            'with `farebox init <dir> --tarballs` (from a Farebox checkout), which installs it from tarballs instead.',
          ]),
      '',
      'Next:',
      `  cd ${relative(process.cwd(), target) || '.'}`,
      '  npm install',
      '  npm start            # with the local stack running (farebox dev)',
    ].join('\n'),
  };
}

export const initCommands: CommandGroup = {
  name: 'init',
  register(program, { act }) {
    program
      .command('init [dir]')
      .description('scaffold a new paid service (@farebox/provider) in dir (default: ./my-service)')
      .option('--name <service>', 'service name (default: the folder name)')
      .option('--price <usdc>', 'price per call in USDC (default 0.001)')
      .option('--description <text>')
      .option(
        '--tarballs [folder]',
        'install @farebox/* from tarballs copied into the scaffold, not the npm registry: packed from the Farebox checkout this farebox runs from, or the farebox-*.tgz files (pnpm pack output) in folder',
      )
      .action((dir: string | undefined, o: InitOptions) => act((ctx) => runInit(dir ?? 'my-service', o, ctx.settings.childEnv))());
  },
};
