import { defineConfig } from 'vitest/config';

// Suites that need the real PostgreSQL (DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test) and Redis (REDIS_URL, default
// redis://127.0.0.1:6379) servers. `.ci/run` runs them after `npm test`.
export default defineConfig({
  test: {
    projects: ['packages/*/vitest.services.config.ts', 'apps/*/vitest.services.config.ts'],
  },
});
