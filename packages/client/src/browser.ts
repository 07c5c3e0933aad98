// `@farebox/client/gateway`: the typed gateway REST client and its errors
// alone (zod only, no Node or Stellar imports), for browsers (the dashboard)
// and for programs that never pay directly (the stdio MCP adapter).
export * from './gateway.js';
export { ClientError, GatewayApiError } from './errors.js';
export type { ClientErrorCode, ClientErrorData } from './errors.js';
