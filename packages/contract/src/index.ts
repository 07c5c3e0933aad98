export { operations, operationList, findOperation, openApiPath, OAUTH_SCOPES, CREDENTIAL_KINDS, credentialReaches } from './operations.js';
export type { Operation, OperationId, Operations, OperationInput, Auth, CredentialKind, HttpMethod, OAuthScope } from './operations.js';
export * as schemas from './all-schemas.js';
export type { ErrorAnswer } from './schemas.js';
export * as inputs from './inputs.js';
/** OAuth connections with their confirmation thresholds (the schemas of `/v1/oauth/connections`). */
export * as connections from './connection-confirmations.js';
/** Signed webhooks: the schemas of `/v1/webhooks` (docs/webhooks.md). */
export * as webhooks from './webhooks.js';
/** Publisher links and the by-owner view: the schemas of `/v1/publisher/links` and `/v1/publisher/by-owner/:owner`. */
export * as publisherLinks from './publisher-links.js';
export { MCP_TOOLS, MCP_INSTRUCTIONS, runMcpTool, registerMcpTools, toolResult, toolError, TOOL_ERROR_META, IDEMPOTENCY_KEY_META } from './mcp.js';
export type {
  FareboxApi,
  McpIcon,
  McpOtherResult,
  McpScopeChallenge,
  McpTool,
  McpToolAnnotations,
  McpToolHost,
  McpToolResult,
  McpToolScope,
  ToolRegistry,
} from './mcp.js';
export { createDiscoveryClient, discoveryAnswers, DiscoveryApiError } from './discovery.js';
export type {
  DiscoveryApiErrorCode,
  DiscoveryApiErrorData,
  DiscoveryClient,
  DiscoveryClientOptions,
  DiscoveryService,
  DiscoveryHit,
  DiscoverySearchResult,
  DiscoveryPage,
} from './discovery.js';
