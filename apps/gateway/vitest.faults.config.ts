import { packageProject } from '../../vitest.shared.js';

// The fault suite (gateways, PostgreSQL and Redis killed under load) runs after every other services suite, alone:
// its timing (a gateway killed with its share of calls under way) needs the machine's two cores to itself, and other
// suites running beside it made it miss its moment (a kill with no call in flight).
export default packageProject('gateway:faults', { include: ['test/faults.pg.test.ts'], testTimeout: 60_000, sequence: { groupOrder: 1 } });
