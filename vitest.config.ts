import { defineConfig } from 'vitest/config';

// One vitest project per package (each keeps its own vitest.config.ts, named
// after the package). Suites that need the real PostgreSQL and Redis servers
// live in `vitest.services.config.ts` files and run with `pnpm test:services`.
export default defineConfig({
  test: {
    projects: ['packages/*/vitest.config.ts', 'apps/*/vitest.config.ts', 'examples/*/vitest.config.ts', 'tests/vitest.config.ts'],
  },
});
