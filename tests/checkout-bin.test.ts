// The checkout's commands (scripts/bin, linked by the root package.json):
// `pnpm farebox` and its siblings run the built program with the arguments,
// streams and exit code they were given, and build it first when it has not
// been built. Run here in a copy of the launchers inside a throw-away pnpm
// workspace whose `@farebox/cli` "build" writes a tiny program.
import { spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

it('the root package links farebox, farebox-mcp and farebox-devnet to launchers of the real bins', async () => {
  const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
  expect(manifest.devDependencies['farebox-checkout-bin']).toBe('link:scripts/bin');
  const bins = JSON.parse(await readFile(join(root, 'scripts', 'bin', 'package.json'), 'utf8')).bin as Record<string, string>;
  expect(Object.keys(bins).sort()).toEqual(['farebox', 'farebox-devnet', 'farebox-mcp']);
  // Each launcher names the bin its package publishes.
  for (const [name, file, pkg] of [
    ['farebox', 'apps/cli/dist/cli.js', 'apps/cli'],
    ['farebox-mcp', 'apps/mcp/dist/main.js', 'apps/mcp'],
    ['farebox-devnet', 'packages/devnet/dist/cli.js', 'packages/devnet'],
  ] as const) {
    const launcher = await readFile(join(root, 'scripts', 'bin', bins[name]!), 'utf8');
    expect(launcher).toContain(`'${file}'`);
    const published = JSON.parse(await readFile(join(root, pkg, 'package.json'), 'utf8')).bin as Record<string, string>;
    expect(join(pkg, published[name]!)).toBe(file);
  }
});

it('builds the program on first use (the build output on stderr, not stdout), then runs it with its arguments and exit code', async () => {
  const fake = await mkdtemp(join(tmpdir(), 'farebox-checkout-'));
  await cp(join(root, 'scripts', 'bin'), join(fake, 'scripts', 'bin'), { recursive: true });
  await writeFile(join(fake, 'package.json'), JSON.stringify({ name: 'fake', private: true }));
  await writeFile(join(fake, 'pnpm-workspace.yaml'), 'packages:\n  - apps/*\n');
  await mkdir(join(fake, 'apps', 'cli'), { recursive: true });
  const program = 'process.stdout.write(JSON.stringify(process.argv.slice(2))); process.exitCode = 3;';
  await writeFile(join(fake, 'apps', 'cli', 'program.js'), program);
  await writeFile(
    join(fake, 'apps', 'cli', 'package.json'),
    JSON.stringify({
      name: '@farebox/cli',
      version: '0.0.0',
      private: true,
      scripts: { build: 'echo building && mkdir -p dist && cp program.js dist/cli.js' },
    }),
  );
  const run = () =>
    spawnSync(process.execPath, [join(fake, 'scripts', 'bin', 'farebox.mjs'), 'call', 'echo', '{"a": 1}'], {
      cwd: tmpdir(),
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });

  const first = run();
  expect(first.stderr).toContain('cli.js is not built yet: building @farebox/cli and the packages it needs');
  expect(first.stderr).toContain('building');
  expect(first.stdout).toBe(JSON.stringify(['call', 'echo', '{"a": 1}']));
  expect(first.status).toBe(3);

  const second = run();
  expect(second.stderr).toBe('');
  expect(second.stdout).toBe(JSON.stringify(['call', 'echo', '{"a": 1}']));
  expect(second.status).toBe(3);
}, 60_000);
