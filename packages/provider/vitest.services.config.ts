import { packageProject } from '../../vitest.shared.js';

export default packageProject('provider:services', { include: ['test/**/*.redis.test.ts'] });
