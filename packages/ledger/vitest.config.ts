import { packageProject } from '../../vitest.shared.js';
import { withNodeConditions } from './vitest.conditions.js';

// The ledger suite on embedded PGlite.
export default withNodeConditions(packageProject('ledger', { include: ['test/**/*.test.ts'] }));
