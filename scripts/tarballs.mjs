#!/usr/bin/env node
// `pnpm tarballs [folder] [@farebox/name ...]`: public packages packed as
// `pnpm publish` would (pnpm pack: workspace: versions replaced, the published
// exports map) into `folder` (default `./tarballs`, from where the command was
// typed): the named packages and every @farebox package they need, or every
// public package (packages/*, apps/* without `"private": true`) when none is
// named. Built first when one has no build yet. Until the packages are on the
// npm registry, `npm i <folder>/*.tgz` installs them (README, "Using the packages").
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';

const root = join(import.meta.dirname, '..');
const cwd = process.env.INIT_CWD ?? process.cwd(); // `pnpm` runs scripts from the root and sets INIT_CWD
const args = process.argv.slice(2);
const named = args.filter((a) => a.startsWith('@farebox/'));
const folders = args.filter((a) => !a.startsWith('@farebox/'));
if (folders.length > 1) {
  console.error(`usage: pnpm tarballs [folder] [@farebox/name ...] (got ${folders.length} folders: ${folders.join(', ')})`);
  process.exit(2);
}
const dest = resolve(cwd, folders[0] ?? 'tarballs');
const execPath = process.env.npm_execpath;
const pnpm = execPath && basename(execPath).startsWith('pnpm') ? [process.execPath, execPath] : ['pnpm'];

const manifests = new Map();
for (const top of ['packages', 'apps']) {
  for (const d of readdirSync(join(root, top)).sort()) {
    const file = join(root, top, d, 'package.json');
    if (existsSync(file)) {
      const m = JSON.parse(readFileSync(file, 'utf8'));
      manifests.set(m.name, { dir: join(root, top, d), manifest: m });
    }
  }
}
const publicNames = [...manifests.keys()].filter((n) => !manifests.get(n).manifest.private);
const unknown = named.filter((n) => !publicNames.includes(n));
if (unknown.length) {
  console.error(`not a public package of this checkout: ${unknown.join(', ')} (the public ones: ${publicNames.join(', ')})`);
  process.exit(2);
}
/** The named packages and the @farebox packages they need at run time. */
const wanted = new Set();
const visit = (n) => {
  if (wanted.has(n)) return;
  wanted.add(n);
  for (const dep of Object.keys(manifests.get(n)?.manifest.dependencies ?? {})) if (dep.startsWith('@farebox/')) visit(dep);
};
for (const n of named.length ? named : publicNames) visit(n);
const dirs = [...wanted].sort().map((n) => manifests.get(n).dir);

if (dirs.some((dir) => !existsSync(join(dir, 'dist')))) {
  console.error('building first (a package has no dist/)...');
  const filters = named.length ? [...wanted].flatMap((n) => ['--filter', `${n}...`]) : [];
  const r = spawnSync(pnpm[0], [...pnpm.slice(1), ...filters, 'run', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (r.status !== 0) process.exit(1);
}
mkdirSync(dest, { recursive: true });

function pack(dir) {
  return new Promise((done, fail) => {
    const child = spawn(pnpm[0], [...pnpm.slice(1), 'pack', '--pack-destination', dest, '--json'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', fail);
    child.on('close', (code) => (code === 0 ? done(JSON.parse(out).filename) : fail(new Error(`pnpm pack in ${relative(root, dir)} failed:\n${out}`))));
  });
}
// Three at a time.
const files = [];
let next = 0;
const worker = async () => {
  while (next < dirs.length) {
    const dir = dirs[next++];
    files.push(await pack(dir));
  }
};
try {
  await Promise.all([worker(), worker(), worker()]);
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
for (const f of files.sort()) console.log(relative(cwd, f) || f);
