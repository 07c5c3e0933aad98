// `farebox init --tarballs <folder>`: a scaffold that installs @farebox/* from
// pnpm-pack tarballs (the packages are not on the npm registry yet). The
// tarballs here are real gzipped tars made by `tar`, holding only a manifest.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli } from './run.js';

describe('farebox init --tarballs', () => {
  let tmp: string;
  const env = () => ({ PATH: process.env.PATH ?? '', HOME: tmp, FAREBOX_CONFIG_DIR: join(tmp, 'farebox'), BROWSER: 'none' });

  /** A tarball as pnpm pack names and lays it out: `package/package.json` inside `farebox-<short>-<version>.tgz`. */
  async function tarball(folder: string, short: string, dependencies: Record<string, string> = {}) {
    const work = await mkdtemp(join(tmp, 'pkg-'));
    await mkdir(join(work, 'package'));
    await writeFile(join(work, 'package', 'package.json'), JSON.stringify({ name: `@farebox/${short}`, version: '0.1.0', dependencies }));
    execFileSync('tar', ['-czf', join(folder, `farebox-${short}-0.1.0.tgz`), '-C', work, 'package']);
  }

  beforeAll(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'farebox-cli-tarballs-'));
  });

  it('refuses a folder that lacks a package @farebox/provider needs, naming it, and writes nothing', async () => {
    const folder = join(tmp, 'partial');
    await mkdir(folder);
    await tarball(folder, 'provider', { '@farebox/protocol': '0.1.0', '@farebox/stellar': '0.1.0', zod: '^4.1.0' });
    await tarball(folder, 'protocol', { zod: '^4.1.0' });
    const dir = join(tmp, 'svc-partial');
    const r = await cli(['init', dir, '--tarballs', folder], { env: env() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `farebox: --tarballs ${folder}: no tarball of @farebox/stellar (needed by @farebox/provider); pack it there too (pnpm tarballs ${folder} @farebox/provider in a Farebox checkout)`,
    );
    expect(existsSync(dir)).toBe(false);

    const none = await cli(['init', dir, '--tarballs', join(tmp, 'missing')], { env: env() });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain(`--tarballs ${join(tmp, 'missing')}: no such folder`);
    expect(existsSync(dir)).toBe(false);
  });

  it('copies provider and what it needs into farebox-packages/ and points package.json at them', async () => {
    const folder = join(tmp, 'full');
    await mkdir(folder);
    await tarball(folder, 'provider', { '@farebox/protocol': '0.1.0', '@farebox/stellar': '0.1.0' });
    await tarball(folder, 'stellar', { '@farebox/protocol': '0.1.0' });
    await tarball(folder, 'protocol');
    await tarball(folder, 'cli', { '@farebox/client': '0.1.0' }); // not needed: left out
    const dir = join(tmp, 'svc');
    const r = await cli(['init', dir, '--tarballs', folder, '--json'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({
      tarballs: {
        '@farebox/provider': 'farebox-provider-0.1.0.tgz',
        '@farebox/protocol': 'farebox-protocol-0.1.0.tgz',
        '@farebox/stellar': 'farebox-stellar-0.1.0.tgz',
      },
    });
    expect((await readdir(join(dir, 'farebox-packages'))).sort()).toEqual([
      'farebox-protocol-0.1.0.tgz',
      'farebox-provider-0.1.0.tgz',
      'farebox-stellar-0.1.0.tgz',
    ]);
    const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    expect(pkg.dependencies['@farebox/provider']).toBe('file:farebox-packages/farebox-provider-0.1.0.tgz');
    expect(pkg.overrides).toEqual({
      '@farebox/protocol': 'file:farebox-packages/farebox-protocol-0.1.0.tgz',
      '@farebox/stellar': 'file:farebox-packages/farebox-stellar-0.1.0.tgz',
    });
  });
});
