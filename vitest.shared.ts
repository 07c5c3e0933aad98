import { defineProject, type UserWorkspaceConfig } from 'vitest/config';

/**
 * The per-package vitest project. Workspace packages resolve to their
 * TypeScript sources through the `@farebox/source` export condition, so tests
 * never need a build first.
 */
export function packageProject(name: string, overrides: UserWorkspaceConfig['test'] = {}) {
  return defineProject({
    resolve: { conditions: ['@farebox/source', 'module', 'node', 'import', 'default'] },
    // vitest hands ssr.resolve.conditions to Node as --conditions: keep only
    // what Node should see, or require() of CJS dependencies (express) would
    // pick their ESM builds.
    ssr: { resolve: { conditions: ['@farebox/source', 'node', 'development|production'] } },
    test: {
      name,
      environment: 'node',
      testTimeout: 30_000,
      hookTimeout: 60_000,
      ...overrides,
    },
  });
}
