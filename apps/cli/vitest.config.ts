import { packageProject } from '../../vitest.shared.js';

export default packageProject('cli', { testTimeout: 120_000 });
