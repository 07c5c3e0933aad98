import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Suites that need the real PostgreSQL (DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test) and Redis (REDIS_URL, default
// redis://127.0.0.1:6379) servers. `.ci/run` runs them after `npm test`.
export default defineConfig({
  test: {
    // Two files at once even on two cores, as the default suite does: the longest files (the 60 s load
    // test, the fault suite with its own PostgreSQL and Redis) mostly wait on the processes they start.
    // On these 2-core machines the suite took 222 s with one worker and 115 s with two, every test passing.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: ['packages/*/vitest.services.config.ts', 'apps/*/vitest.services.config.ts', 'apps/gateway/vitest.faults.config.ts'],
  },
});
