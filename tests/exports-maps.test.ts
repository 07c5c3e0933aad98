import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { expect, it } from 'vitest';

// The repo's exports maps resolve workspace packages to their sources through
// the `@farebox/source` condition (vitest, tsx and tsc use it); what is
// published must not name it, since src/ is not in the tarball. pnpm pack and
// publish replace `exports` with `publishConfig.exports`: this keeps the two in
// step. `pnpm release:check` checks the tarballs themselves.
const root = join(import.meta.dirname, '..');
type Target = string | Record<string, string>;
interface Manifest {
  name: string;
  private?: boolean;
  exports?: Record<string, Target>;
  publishConfig?: { exports?: Record<string, Target> };
}

const manifests = ['packages', 'apps'].flatMap((top) =>
  readdirSync(join(root, top))
    .filter((name) => statSync(join(root, top, name)).isDirectory())
    .flatMap((name) => {
      try {
        return [{ dir: `${top}/${name}`, manifest: JSON.parse(readFileSync(join(root, top, name, 'package.json'), 'utf8')) as Manifest }];
      } catch {
        return [];
      }
    }),
);

/**
 * What a package publishes of its exports map: without the source condition, and without `./testing`
 * (a test kit other workspaces' tests use, such as gateway-core's `test/core-kit.ts`: the repo's only, never in the tarball).
 */
const withoutSource = (exports: Record<string, Target>) =>
  Object.fromEntries(
    Object.entries(exports)
      .filter(([subpath]) => subpath !== './testing')
      .map(([subpath, target]) => {
        if (typeof target === 'string') return [subpath, target];
        const { '@farebox/source': _source, ...published } = target;
        return [subpath, published];
      }),
  );

it('every entry point of every workspace package names types, import and default, types before the file conditions', () => {
  const problems: string[] = [];
  for (const { dir, manifest } of manifests) {
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (typeof target === 'string') continue;
      const conditions = Object.keys(target).filter((c) => c !== '@farebox/source');
      if (conditions.join() !== 'types,import,default') problems.push(`${dir} exports["${subpath}"]: ${conditions.join(', ')}`);
    }
  }
  expect(problems).toEqual([]);
});

it('every public package publishes its exports map without the @farebox/source condition', () => {
  const published = manifests.filter(({ manifest }) => !manifest.private && manifest.exports);
  expect(published.map(({ manifest }) => manifest.name)).toEqual(
    expect.arrayContaining(['@farebox/protocol', '@farebox/provider', '@farebox/cli', '@farebox/mcp']),
  );
  for (const { manifest } of published) {
    expect({ name: manifest.name, exports: manifest.publishConfig?.exports }).toEqual({ name: manifest.name, exports: withoutSource(manifest.exports!) });
  }
});
