import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const LIMIT = 500;

function sources(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    // Tests, benches, build output and dependencies are not read as the product's code.
    if (['node_modules', 'dist', 'test', 'tests', 'bench'].includes(name) || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sources(path, out);
    else if (/\.(ts|tsx|mjs)$/.test(name) && !/\.(test|d)\.tsx?$/.test(name)) out.push(path);
  }
  return out;
}

it(`no source file of a package, an app, an example or a script is over ${LIMIT} lines`, () => {
  const long = ['packages', 'apps', 'examples', 'scripts']
    .flatMap((top) => sources(join(root, top)))
    .map((path) => [relative(root, path), readFileSync(path, 'utf8').split('\n').length - 1] as const)
    .filter(([, lines]) => lines > LIMIT);
  expect(Object.fromEntries(long)).toEqual({});
});
