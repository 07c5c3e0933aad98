import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedFiles, HOSTS, PAGES_WITH_BLOCKS, ROOT } from '../scripts/configuration.js';

// Every setting is declared once, by the host that reads it (apps/*/src/settings.ts, the SDKs'
// src/settings.ts, scripts/configuration.ts for the checkout's scripts): meaning, default, values and
// a zod parse. docs/configuration.md and the settings tables other pages embed are generated from
// those declarations (`pnpm docs:config`); these tests hold the code and the pages to them.

const declared = new Set(HOSTS.flatMap((h) => Object.keys(h.settings)));
const PREFIXED = /\b(?:FAREBOX|STELLAR|TRUSTLESS_WORK)_[A-Z0-9_]+\b/g;
// Names in the form of a setting that are not one: variables the user's own code reads in examples.
const NOT_SETTINGS = new Set(['FAREBOX_WEBHOOK_SECRET', 'STELLAR_SECRET']);
// `FAREBOX_X402_*` in prose names a family, not a variable.
const isFamily = (name: string) => name.endsWith('_');

function files(dir: string, keep: (path: string) => boolean, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, keep, out);
    else if (keep(path)) out.push(path);
  }
  return out;
}
const read = (path: string) => readFileSync(path, 'utf8');
const pages = () => [
  join(ROOT, 'README.md'),
  ...files(join(ROOT, 'docs'), (p) => p.endsWith('.md')),
  ...['packages', 'apps'].flatMap((top) => files(join(ROOT, top), (p) => p.endsWith('README.md'))),
];

describe('settings: one declaration per host', () => {
  it('docs/configuration.md and the settings tables the pages embed are what the declarations generate', () => {
    const stale = [...generatedFiles()].filter(([path, text]) => {
      try {
        return read(join(ROOT, path)) !== text;
      } catch {
        return true;
      }
    });
    expect(
      stale.map(([path]) => path),
      'these pages differ from the settings the hosts declare: run `pnpm docs:config` (edit the declarations, not the tables)',
    ).toEqual([]);
  });

  it('every variable the code reads is declared by a host (and so documented in docs/configuration.md)', () => {
    const sources = [
      ...['packages', 'apps'].flatMap((top) =>
        files(join(ROOT, top), (p) => /\/src\/|\/app\//.test(p) && /\.(ts|tsx|mjs)$/.test(p) && !/\.test\.tsx?$/.test(p)),
      ),
      ...files(join(ROOT, 'scripts'), (p) => /\.(mjs|ts)$/.test(p)),
    ];
    const undeclared = new Map<string, string>();
    for (const file of sources) {
      for (const [name] of read(file).matchAll(PREFIXED)) {
        if (!declared.has(name) && !NOT_SETTINGS.has(name) && !isFamily(name) && !undeclared.has(name)) undeclared.set(name, relative(ROOT, file));
      }
    }
    expect(Object.fromEntries(undeclared)).toEqual({});
  });

  it("each host's reader reads only the variables that host declares, unprefixed ones included", () => {
    // The configuration readers, and the host whose declaration covers them.
    const readers: Record<string, string[]> = {
      gateway: ['apps/gateway/src/config.ts'],
      discovery: ['apps/discovery/src/server.ts'],
      cli: ['apps/cli/src/context.ts'],
      mcp: ['apps/mcp/src/config.ts'],
      provider: ['packages/provider/src/config.ts', 'packages/provider/src/exact-config.ts', 'packages/provider/src/local-env.ts'],
      client: ['packages/client/src/direct.ts', 'packages/client/src/discovery.ts'],
      devnet: ['packages/devnet/src/cli.ts'],
    };
    const wrong: string[] = [];
    const seen = new Set<string>();
    for (const [key, paths] of Object.entries(readers)) {
      const host = HOSTS.find((h) => h.key === key)!;
      for (const path of paths) {
        const code = read(join(ROOT, path))
          .replace(/\/\*[\s\S]*?\*\//g, '')
          .replace(/(^|[^:])\/\/.*$/gm, '$1');
        const names = [
          ...code.matchAll(/\benv\??\.([A-Z][A-Z0-9_]*)\b/g),
          ...code.matchAll(/\benv\[['"]([A-Z][A-Z0-9_]*)['"]\]/g),
          ...code.matchAll(/\bpick\([^;]*?'([A-Z][A-Z0-9_]+)'/g),
        ].map((m) => m[1]!);
        for (const name of new Set(names)) {
          seen.add(name);
          if (!(name in host.settings)) wrong.push(`${path}: ${name} (not in ${host.source})`);
        }
      }
    }
    expect(wrong).toEqual([]);
    // The scan finds the reads it is meant to (a direct read, an option's fallback, an unprefixed name).
    expect([...seen]).toEqual(
      expect.arrayContaining([
        'STELLAR_NETWORK',
        'FAREBOX_ALLOW_LOOPBACK_ENDPOINTS',
        'PUBLIC_ENDPOINT',
        'AGENT_WALLET_SECRET',
        'TRUSTLESS_WORK_PLATFORM_ADDRESS',
      ]),
    );
  });

  it('the pages name no setting that no host declares', () => {
    const unknown = new Map<string, string>();
    for (const page of pages()) {
      for (const [name] of read(page).matchAll(PREFIXED)) {
        if (!declared.has(name) && !NOT_SETTINGS.has(name) && !isFamily(name) && !unknown.has(name)) unknown.set(name, relative(ROOT, page));
      }
    }
    expect(Object.fromEntries(unknown)).toEqual({});
  });

  it('a default a page states in prose (`NAME` ... default 30) is the declared one', () => {
    // Every value each host declares for a name: its fallback and the code spans of its stated default.
    const declaredDefaults = new Map<string, Set<string>>();
    for (const host of HOSTS) {
      for (const [name, s] of Object.entries(host.settings)) {
        const set = declaredDefaults.get(name) ?? new Set<string>();
        if (s.fallback !== undefined) set.add(String(s.fallback));
        for (const [, span] of (s.default ?? '').matchAll(/`([^`]+)`/g)) set.add(span!.replace(/,/g, ''));
        declaredDefaults.set(name, set);
      }
    }
    const contradicted: string[] = [];
    let checked = 0;
    // A new service's own README (apps/cli/templates) speaks of that service's variables, not Farebox's.
    for (const page of pages().filter((p) => !p.includes('/templates/'))) {
      const text = read(page).replace(/<!-- settings:[\s\S]*?<!-- \/settings -->/g, '');
      for (const m of text.matchAll(/`([A-Z][A-Z0-9_]+)`[^`.;]{0,40}?\bdefault:? `?(\d[\d,]*(?:ms|s|m|h)?)\b(?!\s*(?:XLM|USDC))/g)) {
        const name = m[1]!;
        const stated = m[2]!;
        const known = declaredDefaults.get(name);
        if (!known) continue;
        checked++;
        if (!known.has(stated.replace(/,/g, '')))
          contradicted.push(`${relative(ROOT, page)}: ${name} default ${stated} (declared: ${[...known].join(', ') || 'none'})`);
      }
    }
    expect(contradicted).toEqual([]);
    expect(checked).toBeGreaterThan(5);
  });

  it('defaults are stated in generated tables only: no page keeps a hand-written settings table with a default column', () => {
    const found: string[] = [];
    for (const page of pages()) {
      const rel = relative(ROOT, page);
      if (rel === 'docs/configuration.md') continue;
      // Generated blocks are left out (their text is checked above).
      const text = read(page).replace(/<!-- settings:[\s\S]*?<!-- \/settings -->/g, '');
      const lines = text.split('\n');
      lines.forEach((line, i) => {
        if (/^\|\s*variable\s*\|\s*default\s*\|/i.test(line) && /^\|\s*`[A-Z][A-Z0-9_]+`/.test(lines[i + 2] ?? '')) found.push(`${rel}:${i + 1}`);
      });
    }
    expect(found, 'state a default in the declaration and embed a generated table (<!-- settings:<host> NAMES --> ... <!-- /settings -->)').toEqual([]);
    expect(PAGES_WITH_BLOCKS.every((p) => read(join(ROOT, p)).includes('<!-- settings:'))).toBe(true);
  });
});
