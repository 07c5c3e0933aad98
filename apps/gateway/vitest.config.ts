import { packageProject } from '../../vitest.shared.js';

export default packageProject('gateway', { exclude: ['**/node_modules/**', 'test/**/*.pg.test.ts'], testTimeout: 60_000 });
