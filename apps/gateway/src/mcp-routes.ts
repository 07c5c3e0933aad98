import express, { type Request, type Response } from 'express';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { API_BODY_LIMIT, inputError, jsonBody } from './body.js';
import { bearerToken } from './browser-policy.js';
import { enforceRateLimit, GatewayError, MCP_INSTRUCTIONS, registerGatewayMcpTools, type GatewayCore, type Principal } from '@farebox/gateway-core';

export interface McpRoutesOptions {
  log?: (message: string, err?: unknown) => void;
}

/** One MCP server per request (stateless): the four tools, run as `principal`. */
function mcpServer(core: GatewayCore, principal: Principal): McpServer {
  const server = new McpServer({ name: 'farebox', title: 'Farebox', version: '0.1.0' }, { instructions: MCP_INSTRUCTIONS });
  registerGatewayMcpTools(server, core, principal);
  return server;
}

/**
 * The remote MCP server at `/mcp`: Streamable HTTP, stateless (any gateway
 * instance answers any request), JSON responses, OAuth bearer required.
 */
export function mcpRoutes(core: GatewayCore, options: McpRoutesOptions = {}): express.Router {
  const log = options.log ?? ((m: string, e?: unknown) => console.error(m, e));
  const oauth = core.oauth;
  const router = express.Router();
  const json = jsonBody({ limit: API_BODY_LIMIT });

  const challenge = (error?: { code: string; description: string }) =>
    error
      ? `Bearer error="${error.code}", error_description="${error.description}", resource_metadata="${oauth.resourceMetadataUrl}"`
      : `Bearer resource_metadata="${oauth.resourceMetadataUrl}"`;

  function rpcError(res: Response, status: number, message: string, headers: Record<string, string> = {}) {
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.status(status).json({ jsonrpc: '2.0', error: { code: status === 401 || status === 403 ? -32001 : -32000, message }, id: null });
  }

  router.all('/mcp', (req: Request, res: Response, next) => {
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    // MCP transport spec: validate Origin (DNS rebinding, foreign pages). No Origin: not a browser.
    if (!oauth.originAllowed(origin)) return rpcError(res, 403, 'origin not allowed');
    if (origin) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
      res.setHeader('Access-Control-Expose-Headers', 'WWW-Authenticate, Mcp-Session-Id');
    }
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
      res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Mcp-Protocol-Version, Mcp-Session-Id, Last-Event-ID');
      return void res.status(204).end();
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      return rpcError(res, 405, 'method not allowed: this server is stateless, send JSON-RPC with POST');
    }
    next();
  });

  router.post('/mcp', (req: Request, res: Response, next) => {
    (async () => {
      const bearer = bearerToken(req);
      if (bearer === undefined) return rpcError(res, 401, 'authentication required', { 'WWW-Authenticate': challenge() });
      const principal = bearer ? await oauth.authenticate(bearer, oauth.resource) : undefined;
      if (!principal) {
        return rpcError(res, 401, 'invalid or expired access token', {
          'WWW-Authenticate': challenge({ code: 'invalid_token', description: 'the access token is invalid, expired, revoked or not for this resource' }),
        });
      }
      await enforceRateLimit(core.rateLimits, core.config.rateLimits.account, principal.user.id);
      if (principal.clientId) await enforceRateLimit(core.rateLimits, core.config.rateLimits.oauthClient, principal.clientId);
      await new Promise<void>((resolve, reject) => json(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
      const server = mcpServer(core, principal);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    })().catch((err: unknown) => {
      if (err instanceof GatewayError) {
        for (const [k, v] of Object.entries(err.headers ?? {})) res.setHeader(k, v);
        return rpcError(res, err.code === 'RATE_LIMITED' ? 429 : 400, err.message);
      }
      const e = err as { type?: string };
      if (e?.type === 'entity.parse.failed') return rpcError(res, 400, 'parse error: invalid JSON');
      const bad = inputError(err);
      if (bad) return rpcError(res, bad.status, bad.message);
      log('mcp request failed', err);
      if (!res.headersSent) return rpcError(res, 500, 'internal error');
      next(err);
    });
  });

  return router;
}
