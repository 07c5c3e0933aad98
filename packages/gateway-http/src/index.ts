export { createGatewayHandler, SESSION_COOKIE, CSRF_COOKIE } from './handler.js';
export type { GatewayHandler, GatewayHandlerOptions, RouteKit, RouteSpec, UnmatchedResponse } from './handler.js';
export type { HttpRequest, HttpResponse, HttpHeaders, CookieOptions } from './http.js';
export { Reply, readCookies, serializeCookie } from './http.js';
export { toNodeListener, nodeMiddleware, fromNodeRequest, writeNodeResponse } from './node.js';
export type { NodeListenerOptions } from './node.js';
export { recordRequest, requestIdFrom } from './access-log.js';
export type { AnsweredRequest } from './access-log.js';
export { openApiDocument } from './openapi.js';
export type { OpenApiOptions } from './openapi.js';
export { MCP_REVISIONS } from './routes/mcp.js';
export { CALL_NEEDS_JSON } from './routes/call.js';
export {
  API_BODY_LIMIT,
  BODY_TOO_LARGE,
  INVALID_JSON,
  JSON_BAD_UTF8,
  JSON_NOT_UTF8,
  JSON_TOO_DEEP,
  MALFORMED_URL,
  MAX_JSON_DEPTH,
  UNSUPPORTED_ENCODING,
  inexactNumberIn,
  inexactNumberMessage,
  jsonTooDeep,
  mayHoldUnsafeText,
  parseJsonBytes,
  readApiBody,
  readBodyBytes,
  readFormBody,
  readJsonBody,
} from './body.js';
export { fetchAdapter, fromWebRequest, toWebResponse } from './fetch.js';
export type { FetchAdapterOptions } from './fetch.js';
