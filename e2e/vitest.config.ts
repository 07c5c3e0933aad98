import { packageProject } from '../vitest.shared.js';

export default packageProject('e2e', { testTimeout: 120_000 });
