import { createMcpHandler, McpServer, SUPPORTED_PROTOCOL_VERSIONS, type AuthInfo } from '@modelcontextprotocol/server';
import { API_BODY_LIMIT, hasBody, inputError, isJsonBody, readJsonBody } from '../body.js';
import { bearerToken } from '../browser-policy.js';
import type { RequestContext } from '../context.js';
import type { RouteKit, RouteSpec } from '../handler.js';
import type { Reply } from '../http.js';
import {
  asDatabaseUnavailable,
  enforceRateLimit,
  GatewayError,
  MCP_INSTRUCTIONS,
  registerGatewayMcpTools,
  type GatewayCore,
  type Principal,
} from '@farebox/gateway-core';

/** The principal a request was authenticated as, carried to the server factory in `AuthInfo.extra`. */
type FareboxAuthInfo = AuthInfo & { extra: { principal: Principal } };

/** The revisions `/mcp` serves: 2026-07-28 and those of the SDK's 2025 line. */
export const MCP_REVISIONS: readonly string[] = ['2026-07-28', ...SUPPORTED_PROTOCOL_VERSIONS];

/** JSON-RPC error codes `/mcp` answers itself (the SDK answers the others: -32600, -32601, -32602). */
const PARSE_ERROR = -32700;
const UNSUPPORTED_REVISION = -32022;
/** An authentication or authorization refusal (the HTTP status and `WWW-Authenticate` say which). */
const UNAUTHORIZED = -32001;

/**
 * One MCP server per request (stateless): the four tools, run as `principal`.
 * The tool list never changes while a client is connected (a request's
 * server lives for that request), so `tools.listChanged` is not advertised.
 */
function mcpServer(core: GatewayCore, principal: Principal): McpServer {
  const server = new McpServer(
    { name: 'farebox', title: 'Farebox', version: '0.1.0' },
    { instructions: MCP_INSTRUCTIONS, capabilities: { tools: { listChanged: false } } },
  );
  registerGatewayMcpTools(server, core, principal);
  return server;
}

/** The id of a JSON-RPC request body (null when the body is none, a batch or a notification). */
function requestIdOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | undefined)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** An error the SDK reports for a request it refused as malformed: the client's mistake, not the server's. */
function isClientMistake(err: Error): boolean {
  return /^Rejected inbound request\b/.test(err.message);
}

/** A quoted-string of an HTTP auth parameter (RFC 9110 5.6.4). */
const quoted = (s: string) => `"${s.replace(/[\\"]/g, '\\$&')}"`;

/** The request as the web-standard `Request` the SDK's handler takes (the body is already parsed). */
function webRequest(ctx: RequestContext, base: string): globalThis.Request {
  const headers = new Headers();
  for (const [k, v] of Object.entries(ctx.req.headers)) {
    if (v === undefined || k === 'content-length' || k === 'transfer-encoding' || k === 'content-encoding') continue;
    for (const value of Array.isArray(v) ? v : [v]) headers.append(k, value);
  }
  const withBody = ctx.req.method === 'POST' && ctx.body !== undefined;
  return new Request(new URL(ctx.req.url, base), {
    method: ctx.req.method,
    headers,
    ...(withBody ? { body: JSON.stringify(ctx.body) } : {}),
  });
}

/** The SDK's web-standard answer (JSON, or an SSE stream) as the handler's. */
function send(reply: Reply, answer: globalThis.Response): void {
  reply.status = answer.status;
  answer.headers.forEach((value, key) => {
    reply.set(key, value);
  });
  reply.body = answer.body ?? undefined;
}

/**
 * The remote MCP server at `/mcp`: Streamable HTTP on the SDK's v2 server
 * line (`createMcpHandler`), serving protocol 2026-07-28 (no handshake,
 * `server/discover`) and the 2025 revisions (2025-11-25, 2025-06-18,
 * 2025-03-26: `initialize`) at the same URL. Stateless: every request gets a
 * fresh server from one factory, so any gateway instance answers any request.
 * OAuth bearer required on every method; a tool needing a scope the token
 * lacks answers 403 `insufficient_scope` (the SDK's scope challenge).
 */
export function mcpRoutes({ core, log }: RouteKit): RouteSpec[] {
  const oauth = core.oauth;
  const handler = createMcpHandler(
    (ctx) => {
      const principal = (ctx.authInfo as FareboxAuthInfo | undefined)?.extra?.principal;
      // The gate below authenticates every request before the handler runs.
      if (!principal) throw new Error('mcp: no principal for this request');
      return mcpServer(core, principal);
    },
    {
      // A request the SDK refused (bad headers, a body that is no JSON-RPC message) is the client's mistake: an info line, no stack.
      onerror: (err) => (isClientMistake(err) ? core.logger.info({ reason: err.message }, 'mcp request refused') : log('mcp request failed', err)),
    },
  );

  // RFC 6750 3 / MCP authorization: where the metadata is, and every scope the server knows (what to ask for).
  const scopes = oauth.resourceMetadata().scopes_supported.join(' ');
  const challenge = (error?: { code: string; description: string }) =>
    [
      ...(error ? [`error=${quoted(error.code)}`, `error_description=${quoted(error.description)}`] : []),
      `resource_metadata=${quoted(oauth.resourceMetadataUrl)}`,
      `scope=${quoted(scopes)}`,
    ]
      .join(', ')
      .replace(/^/, 'Bearer ');

  function rpcError(reply: Reply, status: number, message: string, headers: Record<string, string> = {}, code?: number, data?: unknown, id: unknown = null) {
    for (const [k, v] of Object.entries(headers)) reply.set(k, v);
    const rpcCode = code ?? (status === 401 || status === 403 ? UNAUTHORIZED : -32000);
    reply.json(status, { jsonrpc: '2.0', id, error: { code: rpcCode, message, ...(data === undefined ? {} : { data }) } });
  }

  async function serve(ctx: RequestContext): Promise<void> {
    const { req, reply } = ctx;
    const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
    // MCP transport spec: validate Origin (DNS rebinding, foreign pages). No Origin: not a browser.
    if (!oauth.originAllowed(origin)) return rpcError(reply, 403, 'origin not allowed');
    if (origin) {
      reply.set('Access-Control-Allow-Origin', origin);
      reply.set('Vary', 'Origin');
      reply.set('Access-Control-Expose-Headers', 'WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version');
    }
    if (req.method === 'OPTIONS') {
      reply.set('Access-Control-Allow-Methods', 'POST, GET, DELETE, OPTIONS');
      reply.set(
        'Access-Control-Allow-Headers',
        'Authorization, Content-Type, Accept, Mcp-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Session-Id, Last-Event-ID',
      );
      return void reply.empty(204);
    }
    // Every method is protected: a client probing with GET learns where to authorize, as one posting does.
    const bearer = bearerToken(req);
    if (bearer === undefined) return rpcError(reply, 401, 'authentication required', { 'WWW-Authenticate': challenge() });
    const principal = bearer ? await oauth.authenticate(bearer, oauth.resource) : undefined;
    if (!bearer || !principal) {
      return rpcError(reply, 401, 'invalid or expired access token', {
        'WWW-Authenticate': challenge({ code: 'invalid_token', description: 'the access token is invalid, expired, revoked or not for this resource' }),
      });
    }
    ctx.principal = principal;
    await enforceRateLimit(core.rateLimits, core.config.rateLimits.account, principal.user.id);
    if (principal.clientId) await enforceRateLimit(core.rateLimits, core.config.rateLimits.oauthClient, principal.clientId);
    if (req.method === 'POST' && hasBody(req) && isJsonBody(req)) ctx.body = await readJsonBody(req, { limit: API_BODY_LIMIT });
    // A revision this server does not serve, whichever era the request looks like: -32022 with the ones it does.
    const revision = req.headers['mcp-protocol-version'];
    if (typeof revision === 'string' && !MCP_REVISIONS.includes(revision)) {
      return rpcError(
        reply,
        400,
        `Unsupported protocol version: ${revision}`,
        {},
        UNSUPPORTED_REVISION,
        { supported: MCP_REVISIONS, requested: revision },
        requestIdOf(ctx.body),
      );
    }
    const authInfo: FareboxAuthInfo = {
      token: bearer,
      clientId: principal.clientId ?? '',
      scopes: [...(principal.scopes ?? [])],
      resource: new URL(oauth.resource),
      resourceMetadataUrl: oauth.resourceMetadataUrl,
      extra: { principal },
    };
    const answer = await handler.fetch(webRequest(ctx, oauth.issuer), {
      authInfo,
      ...(req.method === 'POST' && ctx.body !== undefined ? { parsedBody: ctx.body } : {}),
    });
    // The SDK's scope challenge (403 insufficient_scope) has an OAuth body: a JSON-RPC client reads a JSON-RPC error too.
    if (answer.status === 403 && answer.headers.get('www-authenticate')?.includes('insufficient_scope')) {
      const oauthError = (await answer.json().catch(() => ({}))) as { error?: string; error_description?: string };
      const headers = { 'WWW-Authenticate': answer.headers.get('www-authenticate') ?? '' };
      const message = oauthError.error_description ?? 'insufficient scope';
      return rpcError(reply, 403, message, headers, UNAUTHORIZED, { error: 'insufficient_scope', error_description: message }, requestIdOf(ctx.body));
    }
    send(reply, answer);
  }

  return [
    {
      method: '*',
      path: '/mcp',
      async handle(ctx) {
        try {
          await serve(ctx);
        } catch (thrown) {
          const err = asDatabaseUnavailable(thrown) ?? thrown;
          if (err instanceof GatewayError) {
            for (const [k, v] of Object.entries(err.headers ?? {})) ctx.reply.set(k, v);
            return rpcError(ctx.reply, err.code === 'RATE_LIMITED' ? 429 : err.code === 'UNAVAILABLE' ? 503 : 400, err.message);
          }
          const e = err as { type?: string };
          if (e?.type === 'entity.parse.failed') return rpcError(ctx.reply, 400, 'parse error: invalid JSON', {}, PARSE_ERROR);
          const bad = inputError(err);
          if (bad) return rpcError(ctx.reply, bad.status, bad.message);
          log('mcp request failed', err);
          rpcError(ctx.reply, 500, 'internal error');
        }
      },
    },
  ];
}
