import { packageProject } from '../../vitest.shared.js';

export default packageProject('provider', { exclude: ['**/node_modules/**', 'test/**/*.redis.test.ts'] });
