import { packageProject } from '../../vitest.shared.js';

// The fault suite has its own project, run after this one (vitest.faults.config.ts).
export default packageProject('gateway:pg', { include: ['test/**/*.pg.test.ts'], exclude: ['test/faults.pg.test.ts'], testTimeout: 60_000 });
