/** Every response schema of the contract: `schemas` in `@farebox/contract` (the operator API's are in operator-schemas.ts). */
export * from './schemas.js';
export * from './operator-schemas.js';
export * from './health-schemas.js';
