import { packageProject } from '../../vitest.shared.js';

export default packageProject('discovery-service', { testTimeout: 60_000 });
