import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// One vitest project per package (each keeps its own vitest.config.ts, named
// after the package). Suites that need the real PostgreSQL and Redis servers
// live in `vitest.services.config.ts` files and run with `pnpm test:services`.
export default defineConfig({
  test: {
    // Two test files at once even on two cores (vitest's default there is one): most of a file's time is
    // spent waiting on the processes it starts (gateways, devnet, PostgreSQL). On these 2-core machines the
    // default suite took 650 s with one worker and 442 s with two, every test passing.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: ['packages/*/vitest.config.ts', 'apps/*/vitest.config.ts', 'examples/*/vitest.config.ts', 'e2e/vitest.config.ts', 'tests/vitest.config.ts'],
  },
});
