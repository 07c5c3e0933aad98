import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { expect, it } from 'vitest';

// Libraries first, thin hosts: an app's code may use packages, never another
// app (docs/architecture.md). Tests may start another app as a harness.
const root = resolve(import.meta.dirname, '..');
const dirs = (parent: string) => readdirSync(join(root, parent)).filter((d) => statSync(join(root, parent, d)).isDirectory()).map((d) => join(parent, d));
const pkgName = (dir: string): string | undefined => {
  try {
    return (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name?: string }).name;
  } catch {
    return undefined;
  }
};
const apps = dirs('apps').flatMap((dir) => {
  const name = pkgName(dir);
  return name ? [{ dir, name }] : [];
});
const code = [...apps.map((a) => a.dir), ...dirs('packages')];

function sources(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|tsx|mts|js|mjs)$/.test(e.name) && !/\.d\.ts$/.test(e.name)) out.push(p);
    }
  };
  try {
    walk(join(root, dir, 'src'));
  } catch {
    // no src
  }
  try {
    walk(join(root, dir, 'app'));
  } catch {
    // no app folder
  }
  return out;
}

/** Every module specifier a file imports (static, dynamic, re-export). */
const specifiers = (text: string) => [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g)].map((m) => m[1]!);

it('finds the apps it checks', () => {
  expect(apps.map((a) => a.name)).toEqual(expect.arrayContaining(['@farebox/gateway', '@farebox/cli', '@farebox/mcp', '@farebox/dashboard']));
});

it('no app and no package imports an app in its source', () => {
  const found: string[] = [];
  for (const dir of code) {
    for (const file of sources(dir)) {
      for (const spec of specifiers(readFileSync(file, 'utf8'))) {
        const byName = apps.find((a) => a.dir !== dir && (spec === a.name || spec.startsWith(`${a.name}/`)));
        const target = spec.startsWith('.') ? relative(root, resolve(file, '..', spec)) : undefined;
        const byPath = target !== undefined ? apps.find((a) => a.dir !== dir && (target === a.dir || target.startsWith(`${a.dir}${sep}`))) : undefined;
        const app = byName ?? byPath;
        if (app) found.push(`${relative(root, file)} imports ${spec} (${app.name})`);
      }
    }
  }
  expect(found).toEqual([]);
});

/** An app that exports no module (only static files, like the dashboard's build the gateway serves) is not code to import. */
const exportsCode = (dir: string): boolean => {
  const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { exports?: Record<string, unknown>; main?: string };
  return manifest.main !== undefined || Object.keys(manifest.exports ?? {}).some((k) => k !== './package.json');
};

it('no app and no package depends on an app that exports code', () => {
  const found: string[] = [];
  for (const dir of code) {
    let manifest: { dependencies?: Record<string, string>; peerDependencies?: Record<string, string> };
    try {
      manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as typeof manifest;
    } catch {
      continue;
    }
    for (const name of [...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]) {
      if (apps.some((a) => a.name === name && a.dir !== dir && exportsCode(a.dir))) found.push(`${dir}/package.json depends on ${name}`);
    }
  }
  expect(found).toEqual([]);
});
