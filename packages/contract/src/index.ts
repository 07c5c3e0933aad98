export { operations, operationList, findOperation, openApiPath, OAUTH_SCOPES } from './operations.js';
export type { Operation, OperationId, Operations, OperationInput, Auth, HttpMethod, OAuthScope } from './operations.js';
export * as schemas from './schemas.js';
export * as inputs from './inputs.js';
