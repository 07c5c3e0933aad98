import { packageProject } from '../../vitest.shared.js';

export default packageProject('gateway-core:services', { include: ['test/**/*.{pg,redis}.test.ts'] });
