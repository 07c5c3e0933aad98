// `@farebox/client/gateway`: the typed gateway REST client and its errors
// alone (zod only, no Node or Stellar imports), for browsers (the dashboard)
// and for programs that never pay directly (the stdio MCP adapter).
export * from './gateway.js';
export { ClientError, GatewayApiError } from './errors.js';
// The service-name policy the gateway applies (lower-case letters, digits and single hyphens, 1 to 32), for forms to check as the user types.
export { serviceNameProblem, INVALID_SERVICE_NAME } from '@farebox/protocol';
// The owner key's signature over a publisher link challenge (WebCrypto Ed25519): the dashboard links a key without sending it.
export { signPublisherLink } from '@farebox/protocol';
export type { ClientErrorCode, ClientErrorData } from './errors.js';
