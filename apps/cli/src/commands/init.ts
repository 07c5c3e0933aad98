// `farebox init`: scaffold a paid service from the template.
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MIN_PRICE_BASE_UNITS, parseAmount, serviceNameProblem } from '@farebox/protocol';
import { MIN_PRICE_PROBLEM } from './publisher.js';
import type { CommandGroup, CommandResult } from './shared.js';
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

/**
 * Scaffolds a paid service from the template into `dir` (which must be empty
 * or missing): package.json, src/index.ts, README.md, tsconfig.json, .gitignore.
 */
export async function runInit(dir: string, opts: { name?: string; price?: string; description?: string }): Promise<CommandResult> {
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
  try {
    if (parseAmount(price) < MIN_PRICE_BASE_UNITS) throw new Error(MIN_PRICE_PROBLEM);
  } catch (e) {
    throw new CliError('USAGE', `--price ${JSON.stringify(price)}: ${(e as Error).message}`);
  }
  const description = (opts.description ?? 'Reverses a text. Input: {"text": string}. Output: {"reversed": string, "length": number}.').replace(/["\\]/g, '');
  if (existsSync(target)) {
    if (!(await stat(target)).isDirectory()) throw new CliError('USAGE', `${target} exists and is not a folder`);
    if ((await readdir(target)).length > 0) throw new CliError('USAGE', `${target} is not empty: pick a new folder`);
  }
  const source = templatesDir();
  const files = (await listFiles(join(source, 'service'))).sort();
  const written: string[] = [];
  for (const file of files) {
    const rel = relative(join(source, 'service'), file)
      .split(/[\\/]/)
      .map((part) => (part.startsWith('_') ? part.replace(/^_package\.json$/, 'package.json').replace(/^_gitignore$/, '.gitignore') : part))
      .join('/');
    const text = (await readFile(file, 'utf8')).replaceAll('__SERVICE__', name).replaceAll('__PRICE__', price).replaceAll('__DESCRIPTION__', description);
    const out = join(target, rel);
    await mkdir(dirname(out), { recursive: true });
    await writeFile(out, text, { flag: 'wx' });
    written.push(rel);
  }
  written.sort();
  return {
    data: { dir: target, service: name, price, files: written },
    human: [
      `Created the paid service "${name}" (${price} USDC per call) in ${target}:`,
      ...written.map((f) => `  ${f}`),
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
      .action((dir: string | undefined, o: { name?: string; price?: string; description?: string }) => act(() => runInit(dir ?? 'my-service', o))());
  },
};
