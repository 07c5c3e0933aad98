import { defineProject, type UserWorkspaceConfig } from 'vitest/config';

/**
 * The per-package vitest project. Workspace packages resolve to their
 * TypeScript sources through the `@farebox/source` export condition, so tests
 * never need a build first.
 */
export function packageProject(name: string, overrides: UserWorkspaceConfig['test'] = {}) {
  return defineProject({
    resolve: { conditions: ['@farebox/source', 'module', 'node', 'import', 'default'] },
    ssr: { resolve: { conditions: ['@farebox/source', 'module', 'node', 'import', 'default'] } },
    test: {
      name,
      environment: 'node',
      testTimeout: 30_000,
      hookTimeout: 60_000,
      ...overrides,
    },
  });
}
