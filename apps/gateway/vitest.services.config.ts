import { packageProject } from '../../vitest.shared.js';

export default packageProject('gateway:pg', { include: ['test/**/*.pg.test.ts'], testTimeout: 60_000 });
