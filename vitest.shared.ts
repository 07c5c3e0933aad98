import { defineProject, type UserWorkspaceConfig } from 'vitest/config';
import { trustTestTls } from './packages/test-kit/src/tls.js';

// One self-signed certificate for 127.0.0.1/localhost per test run (test-kit
// testTls()), trusted by every worker and every process a test starts: vitest
// loads this file in its main process before it forks the workers, and Node
// reads NODE_EXTRA_CA_CERTS when a process starts. Stock Stellar clients
// refuse plain http, so tests serve them the devnet over https with it.
try {
  process.env.NODE_EXTRA_CA_CERTS = trustTestTls(process.env.NODE_EXTRA_CA_CERTS);
} catch {
  // No openssl here: only the tests that serve https fail, each with testTls()'s own error.
}

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
      // One module graph per worker, not per file: a file's imports (the Stellar SDK, the gateway, PGlite) were
      // two seconds of every file's time (the default suite: 424 s of imports in 1,148 s; the gateway's
      // project 829 s -> 438 s with every test passing). Each file still builds its own stack in beforeAll and
      // closes it in afterAll; a file that changes something global restores it.
      isolate: false,
      testTimeout: 30_000,
      hookTimeout: 60_000,
      ...overrides,
    },
  });
}
