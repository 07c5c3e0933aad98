import { packageProject } from '../../vitest.shared.js';
import { withNodeConditions } from './vitest.conditions.js';

// The same ledger suite on the real PostgreSQL server at DATABASE_URL
// (default postgres://postgres@127.0.0.1:5432/test); each test file runs in a
// schema of its own, dropped at the end. The lock-file test is about PGlite
// only and runs in the 'ledger' project.
export default withNodeConditions(
  packageProject('ledger:pg', {
    include: ['test/**/*.test.ts'],
    exclude: ['test/lock.test.ts', '**/node_modules/**'],
    env: { LEDGER_TEST_BACKEND: 'postgres' },
  }),
);
