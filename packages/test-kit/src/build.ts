import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Manifest {
  name: string;
  main?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

const manifestOf = (dir: string): Manifest => JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Manifest;

/** The newest modification time under `path` (a file or a folder; 0 when missing). */
function newest(path: string): number {
  if (!existsSync(path)) return 0;
  const s = statSync(path);
  if (!s.isDirectory()) return s.mtimeMs;
  let t = 0;
  for (const name of readdirSync(path)) t = Math.max(t, newest(join(path, name)));
  return t;
}

/** What a package's build reads: its sources, its manifest and its build configuration. */
const inputsTime = (dir: string): number => Math.max(newest(join(dir, 'src')), newest(join(dir, 'package.json')), newest(join(dir, 'tsup.config.ts')));

/**
 * The workspace packages `dir` runs with at run time (`dependencies`,
 * `peerDependencies`, `optionalDependencies` on `workspace:` versions, as
 * installed), dependencies first, each once.
 */
export function workspaceClosure(dir: string): Array<{ name: string; dir: string }> {
  const order: Array<{ name: string; dir: string }> = [];
  const seen = new Set<string>();
  const visit = (pkgDir: string) => {
    const m = manifestOf(pkgDir);
    if (seen.has(m.name)) return;
    seen.add(m.name);
    const deps = { ...m.optionalDependencies, ...m.peerDependencies, ...m.dependencies };
    for (const [name, version] of Object.entries(deps)) {
      if (!String(version).startsWith('workspace:')) continue;
      let depDir: string;
      try {
        depDir = dirname(createRequire(join(pkgDir, 'package.json')).resolve(`${name}/package.json`));
      } catch {
        continue; // an optional peer that is not installed here
      }
      visit(depDir);
    }
    order.push({ name: m.name, dir: pkgDir });
  };
  visit(dir);
  return order;
}

/** The packages of the closure whose build is missing or older than what it is built from. */
function stale(dir: string, output: string): Array<{ name: string; dir: string }> {
  return workspaceClosure(dir).filter((p) => {
    const m = manifestOf(p.dir);
    if (!m.scripts?.build) return false; // run from its sources (a private test package)
    const out = p.dir === dir ? output : join(p.dir, m.main ?? 'dist/index.js');
    return !existsSync(out) || statSync(out).mtimeMs < inputsTime(p.dir);
  });
}

/** Holds a lock folder while `fn` runs: test files in parallel workers never build the same package at once (a build empties dist/). */
function locked<T>(lockDir: string, fn: () => T, timeoutMs = 600_000): T {
  const deadline = Date.now() + timeoutMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      // A lock older than the deadline was left by a killed process.
      const since = statSync(lockDir, { throwIfNoEntry: false })?.mtimeMs;
      if (since !== undefined && Date.now() - since > timeoutMs) rmSync(lockDir, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${lockDir} (another test's build)`);
      Atomics.wait(pause, 0, 0, 200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
}

/**
 * Builds what a spawned binary runs: the package at `packageDir` when
 * `output` (e.g. its `dist/cli.js`) is missing or older than its sources, and
 * before it every workspace package it imports at run time whose `dist/` is
 * older than its `src/` (a built binary loads its workspace dependencies'
 * builds, not their sources). Dependencies first, each with its own `build`
 * script; nothing runs when everything is up to date (CI builds first).
 *
 * @example
 * ensureWorkspaceBuilt(cliDir, join(cliDir, 'dist', 'cli.js'));
 */
export function ensureWorkspaceBuilt(packageDir: string, output: string): void {
  if (stale(packageDir, output).length === 0) return;
  // One lock for the workspace, beside this package (never committed: node_modules).
  const cache = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  locked(join(cache, 'farebox-build.lock'), () => {
    // Again under the lock: another worker may have built it meanwhile.
    for (const p of stale(packageDir, output)) {
      try {
        execFileSync('pnpm', ['run', 'build'], { cwd: p.dir, stdio: 'pipe' });
      } catch (err) {
        const e = err as { stdout?: Buffer; stderr?: Buffer };
        throw new Error(`building ${p.name} failed:\n${e.stderr?.toString() ?? ''}${e.stdout?.toString() ?? ''}`);
      }
    }
  });
}
