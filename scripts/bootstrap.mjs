#!/usr/bin/env node
// The README's two commands (`npm start`, `npm test`) land here so that a
// fresh machine with only Node and npm works: pnpm is fetched from the npm
// registry through npx when it is not installed, dependencies are installed
// from the lockfile, and the workspace is built when needed.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
  if (!existsSync(join(root, 'node_modules', '.modules.yaml'))) {
    pnpm(['install', '--frozen-lockfile']);
  }
}

function build() {
  pnpm(['run', 'build']);
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
