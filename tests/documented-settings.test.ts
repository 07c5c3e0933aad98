import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function files(dir: string, keep: (path: string) => boolean, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, keep, out);
    else if (keep(path)) out.push(path);
  }
  return out;
}

describe('settings', () => {
  it('every environment variable the code reads is documented in the README or docs', () => {
    const sources = [
      ...['packages', 'apps'].flatMap((top) =>
        files(join(root, top), (p) => /\/src\/|\/app\//.test(p) && /\.(ts|tsx|mjs)$/.test(p) && !/\.test\.tsx?$/.test(p)),
      ),
      ...files(join(root, 'scripts'), (p) => p.endsWith('.mjs')),
    ];
    const docs = [
      join(root, 'README.md'),
      ...files(join(root, 'docs'), (p) => p.endsWith('.md')),
      ...['packages', 'apps'].flatMap((top) => files(join(root, top), (p) => p.endsWith('README.md'))),
    ]
      .map((p) => readFileSync(p, 'utf8'))
      .join('\n');
    const undocumented = new Map<string, string>();
    for (const file of sources) {
      for (const [name] of readFileSync(file, 'utf8').matchAll(/\b(?:FAREBOX|STELLAR|TRUSTLESS_WORK)_[A-Z0-9_]+\b/g)) {
        if (!docs.includes(name) && !undocumented.has(name)) undocumented.set(name, relative(root, file));
      }
    }
    expect(Object.fromEntries(undocumented)).toEqual({});
  });
});
