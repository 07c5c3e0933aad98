import { mkdir, mkdtemp, readFile, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureWorkspaceBuilt, workspaceClosure } from '../src/build.js';

const repo = join(import.meta.dirname, '..', '..', '..');

/** A package whose build writes `dist/` from its one source file, and counts its builds. */
async function pkg(dir: string, name: string, deps: Record<string, string> = {}): Promise<void> {
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeFile(join(dir, 'src', 'index.js'), `export const name = ${JSON.stringify(name)};\n`);
  const build =
    "const f=require('fs');f.mkdirSync('dist',{recursive:true});f.copyFileSync('src/index.js','dist/index.js');f.copyFileSync('src/index.js','dist/cli.js');f.appendFileSync('builds','x')";
  await writeFile(
    join(dir, 'package.json'),
    JSON.stringify({
      name,
      version: '0.0.0',
      main: './dist/index.js',
      exports: { '.': './dist/index.js', './package.json': './package.json' },
      scripts: { build: `node -e "${build}"` },
      dependencies: deps,
    }),
  );
}

const builds = async (dir: string) => (await readFile(join(dir, 'builds'), 'utf8').catch(() => '')).length;
const age = (path: string, secondsAgo: number) => utimes(path, new Date(Date.now() - secondsAgo * 1000), new Date(Date.now() - secondsAgo * 1000));

describe('ensureWorkspaceBuilt: a spawned binary runs its workspace dependencies builds, so they are rebuilt too', () => {
  it('builds stale dependencies first, then the package; nothing when all is fresh; only what changed after that', async () => {
    const root = await mkdtemp(join(tmpdir(), 'farebox-build-'));
    const [app, lib, base] = ['app', 'lib', 'base'].map((n) => join(root, n)) as [string, string, string];
    await pkg(base, '@t/base');
    await pkg(lib, '@t/lib', { '@t/base': 'workspace:*' });
    await pkg(app, '@t/app', { '@t/lib': 'workspace:*', zod: '^4.0.0' });
    // As pnpm links a workspace: each package sees its dependencies in its node_modules.
    for (const [from, to, name] of [
      [app, lib, 'lib'],
      [lib, base, 'base'],
    ] as const) {
      await mkdir(join(from, 'node_modules', '@t'), { recursive: true });
      await symlink(to, join(from, 'node_modules', '@t', name));
    }
    expect(workspaceClosure(app).map((p) => p.name)).toEqual(['@t/base', '@t/lib', '@t/app']);

    const output = join(app, 'dist', 'cli.js');
    ensureWorkspaceBuilt(app, output);
    expect([await builds(base), await builds(lib), await builds(app)]).toEqual([1, 1, 1]);
    ensureWorkspaceBuilt(app, output);
    expect([await builds(base), await builds(lib), await builds(app)]).toEqual([1, 1, 1]);

    // A dependency's source changed after its build: it is rebuilt, and nothing else.
    for (const dir of [base, lib, app]) await age(join(dir, 'dist', 'index.js'), 60);
    await age(output, 60);
    for (const dir of [base, lib, app]) for (const f of ['src/index.js', 'package.json']) await age(join(dir, f), 120);
    await writeFile(join(base, 'src', 'index.js'), 'export const name = "changed";\n');
    ensureWorkspaceBuilt(app, output);
    expect([await builds(base), await builds(lib), await builds(app)]).toEqual([2, 1, 1]);
    expect(await readFile(join(base, 'dist', 'index.js'), 'utf8')).toContain('changed');
  });

  it('follows the CLI to every workspace package it loads at run time, the gateway core (operator commands) included', () => {
    const names = workspaceClosure(join(repo, 'apps', 'cli')).map((p) => p.name);
    expect(names.at(-1)).toBe('@farebox/cli');
    for (const name of ['@farebox/client', '@farebox/protocol', '@farebox/stellar', '@farebox/gateway-core', '@farebox/ledger']) expect(names).toContain(name);
    // Dependencies first.
    expect(names.indexOf('@farebox/protocol')).toBeLessThan(names.indexOf('@farebox/client'));
  });
});
