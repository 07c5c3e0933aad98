import { packageProject } from '../../vitest.shared.js';

export default packageProject('mcp', { testTimeout: 60_000 });
