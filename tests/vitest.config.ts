import { defineConfig } from 'vitest/config';

// Checks over the whole tree: what the docs promise about the code.
export default defineConfig({
  // Packages resolve to their TypeScript sources, as in every package's tests.
  resolve: { conditions: ['@farebox/source', 'module', 'node', 'import', 'default'] },
  ssr: { resolve: { conditions: ['@farebox/source', 'node', 'development|production'] } },
  test: {
    name: 'repo',
    include: ['*.test.ts'],
    // These import every package: seconds on a loaded machine.
    testTimeout: 60_000,
  },
});
