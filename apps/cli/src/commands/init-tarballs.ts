// `farebox init --tarballs`: a scaffold that installs @farebox/provider (and the
// @farebox packages it needs) from `pnpm pack` tarballs instead of the npm
// registry: packed from the Farebox checkout this CLI runs from, or taken from
// a folder of tarballs. The tarballs are copied into the scaffold
// (`farebox-packages/`), so `npm install` there needs nothing but the folder.
import { spawn } from 'node:child_process';
import { constants, existsSync, realpathSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import type { Env } from '../context.js';
import { CliError } from '../errors.js';

/** The folder of the scaffold that holds the tarballs. */
export const TARBALLS_DIR = 'farebox-packages';
const ENTRY = '@farebox/provider';

/** What a scaffold depends on: each needed @farebox package and its tarball's file name (in {@link TARBALLS_DIR}). */
export interface Tarballs {
  /** Package name -> tarball file name; the first is @farebox/provider. */
  files: Map<string, string>;
  /** The folder that holds them now. */
  dir: string;
  /** Where they came from (the checkout's root or the folder), for the message. */
  source: string;
  /** A temporary folder to remove once they are copied. */
  cleanup?: string;
}

/** `package/package.json` of a `.tgz` made by npm or pnpm pack (a gzipped tar), or undefined. */
export function tarballManifest(bytes: Buffer): { name?: string; version?: string; dependencies?: Record<string, string> } | undefined {
  const tar = gunzipSync(bytes);
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    if (!name) return undefined;
    const size = Number.parseInt(header.subarray(124, 136).toString('utf8').replace(/\0.*$/s, '').trim() || '0', 8);
    if (name === 'package/package.json') return JSON.parse(tar.subarray(at + 512, at + 512 + size).toString('utf8'));
    at += 512 + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

/** The root of the Farebox checkout this CLI runs from (apps/cli of a pnpm workspace), or undefined when it was installed. */
export function checkoutRoot(): string | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const pkg of [join(here, '..'), join(here, '..', '..')]) {
    const root = join(pkg, '..', '..');
    if (
      existsSync(join(pkg, 'package.json')) &&
      existsSync(join(root, 'pnpm-workspace.yaml')) &&
      existsSync(join(root, 'scripts', 'tarballs.mjs')) &&
      realpathSync(pkg) === realpathSync(join(root, 'apps', 'cli'))
    )
      return realpathSync(root);
  }
  return undefined;
}

/** The @farebox packages `name` needs at run time, itself first (from the manifests at hand). */
function closure(name: string, manifestOf: (name: string) => { dependencies?: Record<string, string> } | undefined, neededBy = new Map<string, string>()) {
  const order: string[] = [];
  const visit = (n: string) => {
    if (order.includes(n)) return;
    order.push(n);
    for (const dep of Object.keys(manifestOf(n)?.dependencies ?? {})
      .filter((d) => d.startsWith('@farebox/'))
      .sort()) {
      if (!neededBy.has(dep)) neededBy.set(dep, n);
      visit(dep);
    }
  };
  visit(name);
  return order;
}

function run(command: string, args: string[], cwd: string, env: Env): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (e) => reject(new CliError('LOCAL', `could not run ${command}: ${e.message}`)));
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(new CliError('LOCAL', `${basename(command)} ${args.join(' ')} (in ${cwd}) failed:\n${out.trim().split('\n').slice(-15).join('\n')}`)),
    );
  });
}

/** Packs @farebox/provider and what it needs from the checkout at `root` (`pnpm tarballs`, which builds them first when they are not built). */
async function packCheckout(root: string, env: Env): Promise<Tarballs> {
  const out = await mkdtemp(join(tmpdir(), 'farebox-init-'));
  try {
    await run(process.execPath, [join(root, 'scripts', 'tarballs.mjs'), out, ENTRY], root, env);
    return { ...(await fromFolder(out, root)), cleanup: out };
  } catch (e) {
    await rm(out, { recursive: true, force: true });
    throw e;
  }
}

/** @farebox/provider and what it needs, from the tarballs in `folder` (refused, naming it, when one is missing). */
async function fromFolder(folder: string, source = folder): Promise<Tarballs> {
  const entries = await readdir(folder).catch(() => {
    throw new CliError('USAGE', `--tarballs ${folder}: no such folder`);
  });
  const byName = new Map<string, { file: string; dependencies?: Record<string, string> }>();
  for (const file of entries.filter((f) => f.endsWith('.tgz')).sort()) {
    let manifest: ReturnType<typeof tarballManifest>;
    try {
      manifest = tarballManifest(await readFile(join(folder, file)));
    } catch {
      continue; // not a package tarball
    }
    if (manifest?.name?.startsWith('@farebox/')) byName.set(manifest.name, { file, ...(manifest.dependencies ? { dependencies: manifest.dependencies } : {}) });
  }
  const neededBy = new Map<string, string>();
  const names = closure(ENTRY, (n) => byName.get(n), neededBy);
  const missing = names.filter((n) => !byName.has(n));
  if (missing.length) {
    const what = missing.map((n) => (neededBy.has(n) ? `${n} (needed by ${neededBy.get(n)})` : n)).join(', ');
    throw new CliError(
      'USAGE',
      `--tarballs ${folder}: no tarball of ${what}; pack ${missing.length > 1 ? 'them' : 'it'} there too (pnpm tarballs ${folder} @farebox/provider in a Farebox checkout)`,
    );
  }
  return { files: new Map(names.map((n) => [n, byName.get(n)!.file])), dir: folder, source };
}

/**
 * The tarballs of a `--tarballs [folder]` scaffold: packed from this CLI's
 * checkout when no folder is given, else read from the folder.
 */
export async function resolveTarballs(folder: string | true, env: Env): Promise<Tarballs> {
  if (folder !== true) return fromFolder(folder);
  const root = checkoutRoot();
  if (!root)
    throw new CliError(
      'USAGE',
      '--tarballs without a folder packs the @farebox packages of the Farebox checkout this farebox runs from, and it runs from none: give the folder of the farebox-*.tgz files (pnpm pack output)',
    );
  return packCheckout(root, env);
}

/** Copies the tarballs into the scaffold and points its package.json at them: @farebox/provider a dependency, the rest overrides. */
export async function useTarballs(target: string, pkgText: string, tarballs: Tarballs): Promise<string> {
  const pkg = JSON.parse(pkgText) as { dependencies?: Record<string, string>; overrides?: Record<string, string> };
  const spec = (n: string) => `file:${TARBALLS_DIR}/${tarballs.files.get(n)}`;
  await mkdir(join(target, TARBALLS_DIR), { recursive: true });
  for (const file of tarballs.files.values()) await copyFile(join(tarballs.dir, file), join(target, TARBALLS_DIR, file), constants.COPYFILE_EXCL);
  pkg.dependencies = { ...pkg.dependencies, [ENTRY]: spec(ENTRY) };
  const others = [...tarballs.files.keys()].filter((n) => n !== ENTRY);
  if (others.length) pkg.overrides = Object.fromEntries(others.map((n) => [n, spec(n)]));
  return `${JSON.stringify(pkg, null, 2)}\n`;
}
