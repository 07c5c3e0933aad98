import { packageProject } from '../../vitest.shared.js';

export default packageProject('gateway-core', { exclude: ['**/node_modules/**', 'test/**/*.{pg,redis}.test.ts'] });
