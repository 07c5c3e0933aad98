export { createApiHandlers } from './handlers.js';
export type { ApiHandler, ApiHandlers, ApiInput, ApiOutput, MountedOperationId } from './handlers.js';
