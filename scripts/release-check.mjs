#!/usr/bin/env node
// `pnpm release:check`: what npm would install, checked before it is published.
//
// Packs every public workspace package (packages/*, apps/* without
// `"private": true`) with `pnpm pack`, as `pnpm publish` would (workspace:
// versions replaced, `publishConfig.exports` in place of the repo's exports
// map, so the `@farebox/source` condition and its src/ paths are not shipped),
// then checks each tarball:
//   - publint: the manifest against the files really in the tarball;
//   - are-the-types-wrong (@arethetypeswrong/core, the library behind `attw`)
//     with the `esm-only` profile: every entry point must resolve to its types
//     and JavaScript under TypeScript's `node16` (from ESM) and `bundler`
//     resolutions. The packages are ESM only ("type": "module", no CJS build),
//     so the profile leaves out `node16-cjs` (attw counts a require() that
//     reaches ESM as an error, but Node 20.19+, our floor, loads ESM through
//     require()) and `node10` (ignores `exports`, so no subpath can resolve).
// Needs the build (`pnpm build`, which `npm test` runs first). Prints one line
// per package, the problems in full, and exits 1 if any.
import { spawn } from 'node:child_process';
import { access, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { getExitCode } from '@arethetypeswrong/cli/internal/getExitCode';
import { typed } from '@arethetypeswrong/cli/internal/render';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';

const root = join(import.meta.dirname, '..');
// The pnpm that runs this script (`pnpm release:check` sets npm_execpath), else the one on the PATH.
const execPath = process.env.npm_execpath;
const pnpm = execPath && basename(execPath).startsWith('pnpm') ? { command: process.execPath, args: [execPath] } : { command: 'pnpm', args: [] };
const ATTW = { ignoreRules: [], ignoreResolutions: ['node10', 'node16-cjs'], format: 'ascii', emoji: false, summary: true };

// The core ships with the CLI (same version); it is not a direct dependency.
const cliManifest = createRequire(import.meta.url).resolve('@arethetypeswrong/cli/package.json');
const attw = await import(pathToFileURL(createRequire(cliManifest).resolve('@arethetypeswrong/core')).href);

async function publicPackages() {
  const found = [];
  for (const top of ['packages', 'apps']) {
    for (const name of (await readdir(join(root, top))).sort()) {
      const dir = join(root, top, name);
      let manifest;
      try {
        manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
      } catch {
        continue;
      }
      if (!manifest.private) found.push({ dir, manifest });
    }
  }
  return found;
}

function run(command, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${command} ${args.join(' ')} (in ${relative(root, cwd)}) exited ${code}\n${err}${out}`)),
    );
  });
}

/** Runs `fn` over `items`, `limit` at a time, keeping the order of the results. */
async function inTurns(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * What publint does not check: every entry point of the published exports map
 * names `types`, `import` and `default` (so require() resolves too), and no
 * condition points into the repo's sources (`@farebox/source` is dev-only).
 */
function exportsProblems(manifest) {
  const problems = [];
  if (JSON.stringify(manifest).includes('@farebox/source')) problems.push('manifest: the published package.json still names the @farebox/source condition');
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    if (typeof target === 'string') continue;
    const missing = ['types', 'import', 'default'].filter((condition) => !(condition in target));
    if (missing.length) problems.push(`manifest: exports["${subpath}"] has no ${missing.join(', ')} condition`);
  }
  if (!manifest.exports) problems.push('manifest: no exports map');
  return problems;
}

async function check({ name, tarball }) {
  const data = await readFile(tarball);
  const problems = [];

  const notes = [];
  const lint = await publint({ pack: { tarball: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) }, level: 'suggestion', strict: true });
  for (const message of lint.messages) {
    const text = `publint ${message.type}: ${formatMessage(message, lint.pkg, { color: false }) ?? message.code}`;
    (message.type === 'suggestion' ? notes : problems).push(text);
  }
  problems.push(...exportsProblems(lint.pkg));

  const analysis = await attw.checkPackage(attw.createPackageFromTarballData(new Uint8Array(data)));
  if (!analysis.types) problems.push('attw: the package ships no type declarations');
  else if (getExitCode(analysis, ATTW) !== 0) problems.push(`attw (profile esm-only):\n${await typed(analysis, ATTW)}`);

  return { name, problems, notes, entrypoints: Object.keys(analysis.entrypoints ?? {}).length };
}

const started = performance.now();
const packages = await publicPackages();
const unbuilt = [];
for (const { dir } of packages) {
  try {
    await access(join(dir, 'dist'));
  } catch {
    unbuilt.push(relative(root, dir));
  }
}
if (unbuilt.length) {
  console.error(`release:check: no dist/ in ${unbuilt.join(', ')}: run \`pnpm build\` first.`);
  process.exit(1);
}

const out = await mkdtemp(join(tmpdir(), 'farebox-release-'));
let failed = 0;
try {
  const packed = await inTurns(packages, 4, async ({ dir, manifest }) => {
    const info = JSON.parse(await run(pnpm.command, [...pnpm.args, 'pack', '--pack-destination', out, '--json'], dir));
    return { name: manifest.name, tarball: info.filename, files: info.files.length };
  });
  const packedMs = performance.now() - started;
  for (const p of packed) {
    const result = await check(p);
    const status = result.problems.length ? 'FAIL' : 'ok  ';
    console.log(`${status} ${p.name.padEnd(24)} ${String(p.files).padStart(3)} files, ${result.entrypoints} entry points`);
    for (const problem of [...result.problems, ...result.notes]) console.log(`       ${problem.replaceAll('\n', '\n       ')}`);
    if (result.problems.length) failed++;
  }
  const seconds = (ms) => (ms / 1000).toFixed(1);
  console.log(
    `\nrelease:check: ${packed.length - failed} passed, ${failed} failed (publint, attw --profile esm-only); packed in ${seconds(packedMs)} s, ${seconds(performance.now() - started)} s in all`,
  );
} finally {
  await rm(out, { recursive: true, force: true });
}
process.exitCode = failed ? 1 : 0;
