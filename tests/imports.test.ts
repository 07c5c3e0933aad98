import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkImports,
  checkManifests,
  cycles,
  loadSources,
  loadWorkspaces,
  parseLayers,
  references,
  repoRoot,
  type SourceFile,
  type Workspace,
} from './dependency-rule.js';

// Dependencies point one way (docs/architecture.md): every manifest against
// the doc's layers, every reference of every workspace's files to another
// workspace. The checker's own tests below plant what the rule forbids in
// copies of the real data and see it refused.
const doc = readFileSync(join(repoRoot, 'docs', 'architecture.md'), 'utf8');
const layers = parseLayers(doc);
const workspaces = loadWorkspaces(repoRoot);

/** The real workspaces with `edit` applied to a copy of the one named `short`. */
function planted(short: string, edit: (w: Workspace) => void): Workspace[] {
  return workspaces.map((w) => {
    if (w.short !== short) return w;
    const copy: Workspace = { ...w, deps: Object.fromEntries(Object.entries(w.deps).map(([k, v]) => [k, [...v]])) as Workspace['deps'] };
    edit(copy);
    return copy;
  });
}

describe('the tree', () => {
  it('finds every workspace: the packages, the apps, the examples and e2e', () => {
    expect(workspaces.map((w) => w.short)).toEqual(
      expect.arrayContaining([
        'protocol',
        'gateway-core',
        'client',
        'test-kit',
        'gateway',
        'cli',
        'mcp',
        'dashboard',
        'discovery-service',
        'example-echo',
        'e2e',
      ]),
    );
  });

  it('every manifest keeps to the layers: no dependency of any kind points up or sideways, no package depends on an app, no cycle', () => {
    expect(checkManifests(workspaces, layers)).toEqual([]);
  });

  it('every file of every workspace reaches other workspaces only through their package names, listed in its manifest', () => {
    const files = loadSources(repoRoot, workspaces);
    expect(files.length).toBeGreaterThan(300);
    expect(checkImports(files, workspaces)).toEqual([]);
  });
});

describe('the checker', () => {
  it('refuses a devDependency from a package to an app', () => {
    const problems = checkManifests(
      planted('client', (w) => w.deps.devDependencies.push('gateway')),
      layers,
    );
    expect(problems).toContainEqual(expect.stringMatching(/^packages\/client\/package\.json: devDependencies @farebox\/gateway: a package depends on an app/));
  });

  it('refuses an app depending on another app, and an upward or sideways dependency of a package', () => {
    expect(
      checkManifests(
        planted('cli', (w) => w.deps.devDependencies.push('gateway')),
        layers,
      ),
    ).toContainEqual(expect.stringContaining('devDependencies @farebox/gateway: an app depends on another app'));
    expect(
      checkManifests(
        planted('gateway-core', (w) => w.deps.dependencies.push('client')),
        layers,
      ),
    ).toContainEqual(expect.stringContaining('dependencies @farebox/client: a dependency on the same layer'));
    expect(
      checkManifests(
        planted('protocol', (w) => w.deps.devDependencies.push('devnet')),
        layers,
      ),
    ).toContainEqual(expect.stringContaining('devDependencies @farebox/devnet: a dependency on a higher layer'));
  });

  it('refuses test-kit as a runtime dependency, and a test-kit that depends on more than its users may', () => {
    expect(
      checkManifests(
        planted('discovery', (w) => w.deps.dependencies.push('test-kit')),
        layers,
      ),
    ).toContainEqual(expect.stringContaining('dependencies @farebox/test-kit: @farebox/test-kit is a devDependency only'));
    const kitOnDevnet = checkManifests(
      planted('test-kit', (w) => w.deps.dependencies.push('devnet')),
      layers,
    );
    expect(kitOnDevnet).toContainEqual(
      expect.stringMatching(
        /^packages\/discovery\/package\.json: devDependencies @farebox\/test-kit, which depends on @farebox\/devnet: a dependency on a higher layer/,
      ),
    );
    expect(
      checkManifests(
        planted('test-kit', (w) => w.deps.dependencies.push('gateway')),
        layers,
      ),
    ).toContainEqual(expect.stringContaining('test-kit depends on an app'));
  });

  it('refuses a published package depending on a private one, a workspace on no layer, and names a cycle', () => {
    const none = () => ({ dependencies: [], optionalDependencies: [], peerDependencies: [], devDependencies: [] });
    const tiny = parseLayers('```layers\n0: base\n1: lib\n```');
    const base: Workspace = { dir: 'packages/base', name: '@farebox/base', short: 'base', private: true, deps: none() };
    const lib: Workspace = { dir: 'packages/lib', name: '@farebox/lib', short: 'lib', private: false, deps: { ...none(), dependencies: ['base'] } };
    expect(checkManifests([base, lib], tiny)).toEqual(['packages/lib/package.json: dependencies @farebox/base: a published package depends on a private one']);
    expect(checkManifests([base, { ...lib, deps: { ...none(), devDependencies: ['base'] } }], tiny)).toEqual([]);
    const stranger: Workspace = {
      dir: 'packages/stranger',
      name: '@farebox/stranger',
      short: 'stranger',
      private: false,
      deps: { dependencies: [], optionalDependencies: [], peerDependencies: [], devDependencies: [] },
    };
    expect(checkManifests([...workspaces, stranger], layers)).toContain(
      'packages/stranger/package.json: @farebox/stranger is on no layer of docs/architecture.md',
    );
    // The loop pnpm warned about: dashboard -> client -> (dev) gateway -> dashboard.
    expect(cycles(planted('client', (w) => w.deps.devDependencies.push('gateway')))).toContainEqual(['client', 'gateway', 'dashboard', 'client']);
  });

  const file = (workspace: string, path: string, text: string): SourceFile => ({ workspace, path, text });

  it("refuses a relative import of another workspace's src/ or test/, and a new URL() into it", () => {
    const problems = checkImports(
      [
        file('apps/cli', 'apps/cli/planted.ts', "import { createClient } from '../../packages/client/src/index.js';"),
        file('apps/discovery', 'apps/discovery/test/planted.test.ts', "import { writeTinyModel } from '../../../packages/discovery/test/tiny-model.js';"),
        file('apps/gateway', 'apps/gateway/bench/planted.ts', "const cli = fileURLToPath(new URL('../../../packages/devnet/dist/cli.js', import.meta.url));"),
      ],
      workspaces,
    );
    expect(problems).toEqual([
      "apps/cli/planted.ts: reaches into packages/client by path ('../../packages/client/src/index.js'): use @farebox/client through its package name and exports",
      "apps/discovery/test/planted.test.ts: reaches into packages/discovery by path ('../../../packages/discovery/test/tiny-model.js'): use @farebox/discovery through its package name and exports",
      "apps/gateway/bench/planted.ts: reaches into packages/devnet by path (new URL('../../../packages/devnet/dist/cli.js')): use @farebox/devnet through its package name and exports",
    ]);
  });

  it("refuses an import of a workspace the manifest does not list, a devDependency from src/, and a deep import of another's internals", () => {
    const problems = checkImports(
      [
        file('packages/client', 'packages/client/src/planted.ts', "export { createGateway } from '@farebox/gateway-core';"),
        file('packages/client', 'packages/client/src/planted-dev.ts', "const { startDevnet } = await import('@farebox/devnet');"),
        file('apps/gateway', 'apps/gateway/test/planted.test.ts', "import { x } from '@farebox/contract/src/schemas.js';"),
      ],
      workspaces,
    );
    expect(problems).toEqual([
      'packages/client/src/planted.ts: imports @farebox/gateway-core, which packages/client/package.json does not list',
      'packages/client/src/planted-dev.ts: src/ imports @farebox/devnet, a devDependency only of packages/client',
      "apps/gateway/test/planted.test.ts: imports @farebox/contract/src/schemas.js: another workspace's internals (use its exports)",
    ]);
  });

  it('accepts what the rule allows: its own files, shared root files, declared packages and their exports', () => {
    const problems = checkImports(
      [
        file(
          'apps/gateway',
          'apps/gateway/test/ok.test.ts',
          "import { startGateway } from '../src/index.js';\nimport { packageProject } from '../../../vitest.shared.js';\nimport { createGatewayClient } from '@farebox/client';",
        ),
        file('e2e', 'e2e/ok.test.ts', "import { startStack } from '@farebox/gateway/testing';\nimport { x } from './stack.js';"),
        file('packages/client', 'packages/client/src/ok.ts', "// an example: import { createGateway } from '@farebox/gateway-core';\nimport { z } from 'zod';"),
      ],
      workspaces,
    );
    expect(problems).toEqual([]);
  });

  it('reads static, dynamic and re-exported imports, require and new URL, not comments', () => {
    const refs = references(
      [
        "import a from './a.js';",
        "export { b } from '@farebox/b';",
        "const c = await import('@farebox/c');",
        "import './d.js';",
        "const e = require('@farebox/e');",
        "const f = new URL('../f.js', import.meta.url);",
        "/** import { g } from '@farebox/g'; */",
        "// import { h } from '@farebox/h';",
        "const url = 'http://example.com/'; import i from './i.js';",
      ].join('\n'),
    ).map((r) => r.spec);
    expect(refs).toEqual(['./a.js', '@farebox/b', '@farebox/c', './d.js', '@farebox/e', './i.js', '../f.js']);
  });
});
