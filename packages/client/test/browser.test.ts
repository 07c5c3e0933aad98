import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { expect, it } from 'vitest';

/** Workspace packages followed into their sources (the rest are reported by name). */
const WORKSPACE: Record<string, string> = {
  '@farebox/contract': resolve(import.meta.dirname, '../../contract/src/index.ts'),
  '@farebox/protocol': resolve(import.meta.dirname, '../../protocol/src/index.ts'),
};

/** Every module reached from `entry` by its static imports: our files, and the packages they name. */
function reach(entry: string): { files: string[]; packages: Set<string> } {
  const files: string[] = [];
  const packages = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (files.includes(file)) continue;
    files.push(file);
    const text = readFileSync(file, 'utf8');
    // Static imports and re-exports, and dynamic import() that is code (not `typeof import('x')` or `import('x').Type`).
    for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s*['"]([^'"]+)['"]|(?<!typeof\s)import\(\s*['"]([^'"]+)['"]\s*\)(?!\.[A-Z])/g)) {
      const spec = (m[1] ?? m[2])!;
      if (spec.startsWith('.')) todo.push(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
      else if (WORKSPACE[spec]) todo.push(WORKSPACE[spec]);
      else packages.add(spec);
    }
  }
  return { files, packages };
}

it('@farebox/client/gateway (what the dashboard bundles) reaches zod only (through @farebox/contract and @farebox/protocol, both runtime-neutral): no Node built-in, no Stellar SDK', () => {
  const { files, packages } = reach(resolve(import.meta.dirname, '../src/browser.ts'));
  expect(files.length).toBeGreaterThan(2);
  expect([...packages]).toEqual(['zod']);
});

it('@farebox/client/mcp reaches zod only (it runs inside the gateway and the stdio adapter alike)', () => {
  expect([...reach(resolve(import.meta.dirname, '../src/mcp/index.ts')).packages]).toEqual(['zod']);
});

it('the whole client reaches Node and Stellar: the check above can fail', () => {
  const { packages } = reach(resolve(import.meta.dirname, '../src/index.ts'));
  expect([...packages].some((p) => p.startsWith('@stellar/') || p.startsWith('@farebox/stellar'))).toBe(true);
});
