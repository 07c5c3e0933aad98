#!/usr/bin/env node
// The README's two commands (`npm start`, `npm test`) land here so that a
// fresh machine with only Node and npm works: pnpm is fetched from the npm
// registry through npx when it is not installed, dependencies are installed
// from the lockfile, and the workspace is built when needed.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const PNPM_VERSION = '10.34.9';
const task = process.argv[2] ?? 'test';
const rest = process.argv.slice(3);

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32', ...opts });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function pnpm(args) {
  const probe = spawnSync('pnpm', ['--version'], { encoding: 'utf8', shell: process.platform === 'win32' });
  if (probe.status === 0 && probe.stdout.trim().startsWith('10.')) return run('pnpm', args);
  return run('npx', ['--yes', `pnpm@${PNPM_VERSION}`, ...args]);
}

function setup() {
  // Installed, with the checkout's commands linked (`pnpm farebox`: an install older than them has no link yet).
  if (
    !existsSync(join(root, 'node_modules', '.modules.yaml')) ||
    !existsSync(join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'farebox.cmd' : 'farebox'))
  ) {
    pnpm(['install', '--frozen-lockfile']);
  }
}

// What a build reads: every package's and app's sources and build settings,
// the lockfile and the shared TypeScript settings (tests and build output are
// not inputs).
const SKIP = new Set(['node_modules', 'dist', 'test', '.farebox', '.turbo', 'coverage']);
function inputs(dir, out) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP.has(entry.name) || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) inputs(path, out);
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

/** A hash of everything the build reads: the same stamp means the same build output. */
function sourceStamp() {
  const files = ['package.json', 'pnpm-lock.yaml', 'pnpm-workspace.yaml', 'tsconfig.base.json', 'tsconfig.json'].map((f) => join(root, f));
  for (const group of ['packages', 'apps']) {
    for (const pkg of readdirSync(join(root, group), { withFileTypes: true })) {
      if (pkg.isDirectory()) inputs(join(root, group, pkg.name), files);
    }
  }
  const hash = createHash('sha256');
  for (const file of files.sort()) {
    if (!existsSync(file)) continue;
    hash.update(file.slice(root.length)).update('\0').update(readFileSync(file)).update('\0');
  }
  return hash.digest('hex');
}

const STAMP = join(root, 'node_modules', '.cache', 'farebox-build-stamp');

/** Builds the workspace, unless nothing it reads changed since the last build (`FAREBOX_FORCE_BUILD=1` builds anyway). */
function build() {
  const stamp = sourceStamp();
  const built = existsSync(join(root, 'apps', 'gateway', 'dist', 'main.js'));
  if (built && process.env.FAREBOX_FORCE_BUILD !== '1' && existsSync(STAMP) && readFileSync(STAMP, 'utf8') === stamp) {
    console.log('build is up to date (no source changed since the last one)');
    return;
  }
  pnpm(['run', 'build']);
  mkdirSync(dirname(STAMP), { recursive: true });
  writeFileSync(STAMP, stamp);
}

switch (task) {
  case 'setup':
    setup();
    build();
    break;
  case 'test':
    setup();
    build();
    pnpm(['run', 'typecheck']);
    pnpm(['exec', 'vitest', 'run', ...rest]);
    break;
  case 'start':
    setup();
    build();
    run(process.execPath, [join(root, 'scripts', 'start.mjs'), ...rest]);
    break;
  default:
    console.error(`unknown task ${task}: use setup, test or start`);
    process.exit(2);
}
