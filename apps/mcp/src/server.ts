import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, ProtocolError, ProtocolErrorCode, Server, type CallToolResult } from '@modelcontextprotocol/server';
import { serveStdio, type ServeStdioOptions, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import { PACKAGE_NAME, PACKAGE_VERSION, type AdapterConfig } from './config.js';
import { ClientError, createGatewayClient, GatewayApiError } from '@farebox/client/gateway';
import { MCP_INSTRUCTIONS, registerMcpTools, toolError } from '@farebox/client/mcp';
import { createOAuthSession, oauthFetch, type OAuthSession, type OAuthSessionOptions } from '@farebox/client/oauth';

export interface AdapterOptions {
  config: AdapterConfig;
  /** Messages for the user (default stderr). */
  log?: (line: string) => void;
  fetch?: typeof fetch;
  /** OAuth timings (tests shorten them). */
  oauth?: Pick<OAuthSessionOptions, 'signInTimeoutMs' | 'refreshMarginMs' | 'lock'>;
}

export interface Adapter {
  /**
   * A fresh MCP server with the four tools: what `serveStdio` builds for each
   * connection, in the era the client opened with (2026-07-28 or a 2025 revision).
   */
  createServer(): McpServer | Server;
  /** Serves the adapter on stdio (or on `options.transport`), both protocol eras. */
  serve(options?: ServeStdioOptions): StdioServerHandle;
  /** The OAuth session (undefined in API-key mode). */
  session: OAuthSession | undefined;
  close(): Promise<void>;
}

type ToolResult = CallToolResult;

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

const SPENDING_FIELDS = ['limit_source', 'limit_usd', 'remaining_usd', 'resets_at', 'allowed_services', 'max_call_usd'];
/** The machine-readable fields of a spending-policy refusal's body. */
const spendingFields = (body: Record<string, unknown>) => Object.fromEntries(SPENDING_FIELDS.filter((k) => k in body).map((k) => [k, body[k]]));

/**
 * API-key mode: the tools of `@farebox/client/mcp` run here over the REST
 * client (the remote `/mcp` takes OAuth tokens only). A refusal carries the
 * gateway's message and the id of the request it answered.
 */
function registerRestTools(server: McpServer, config: AdapterConfig, api: ReturnType<typeof createGatewayClient>): void {
  registerMcpTools(server, api, {
    onError(e) {
      if (e instanceof GatewayApiError) {
        const body = e.body && typeof e.body === 'object' && !Array.isArray(e.body) ? (e.body as Record<string, unknown>) : {};
        const said = typeof body.error === 'string' ? body.error : `the gateway answered HTTP ${e.status}`;
        const requestId = e.requestId ?? 'unknown';
        return toolError(`${said} (request id ${requestId})`, {
          status: e.status,
          requestId,
          // Every error answer of a paid call names it; a 500 is a call that failed and was refunded.
          ...(typeof body.callId === 'string' ? { callId: body.callId, ...(e.status === 500 ? { refunded: true } : {}) } : {}),
          ...(typeof e.data.idempotencyKey === 'string' ? { idempotencyKey: e.data.idempotencyKey } : {}),
          // A refusal by the key's spending policy: its fields, as the gateway's /mcp tools give them (docs/api.md, "Spending policies").
          ...(e.spendingLimit ? spendingFields(body) : {}),
        });
      }
      if (e instanceof ClientError && e.code === 'NETWORK') {
        // A paid call asked twice under one key and still unanswered: that key tells whether it was charged.
        const key = typeof e.data.idempotencyKey === 'string' ? e.data.idempotencyKey : undefined;
        return toolError(
          `cannot reach the Farebox gateway at ${config.url}: ${e.message}${key ? ' (the call was asked twice without an answer: get_transactions shows whether it was charged)' : ''}`,
          key ? { idempotencyKey: key } : {},
        );
      }
      return toolError(`Farebox: ${message(e)}`);
    },
  });
}

/**
 * OAuth mode: a client of the gateway's `/mcp`, connected on first use (which
 * is when the browser sign-in happens), reconnected after a failure.
 */
function upstream(config: AdapterConfig, session: OAuthSession, doFetch: typeof fetch) {
  let connecting: Promise<Client> | undefined;
  const connect = () => {
    connecting ??= (async () => {
      // 'auto': 2026-07-28 when the gateway offers it (server/discover), else the 2025 handshake.
      const client = new Client({ name: PACKAGE_NAME, version: PACKAGE_VERSION }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(config.mcpUrl), { fetch: oauthFetch(session, doFetch) }));
      return client;
    })().catch((e: unknown) => {
      connecting = undefined;
      throw e;
    });
    return connecting;
  };
  return {
    connect,
    async close() {
      const c = connecting;
      connecting = undefined;
      await c?.then((client) => client.close()).catch(() => undefined);
    },
  };
}

/**
 * Creates the stdio adapter: the four Farebox tools, bridged to the gateway's
 * `/mcp` with OAuth, or served over the REST API with an API key. It speaks
 * both protocol eras on stdio (the SDK's `serveStdio`).
 *
 * @example
 * const adapter = createAdapter({ config: loadAdapterConfig(process.env) });
 * adapter.serve();
 */
export function createAdapter(options: AdapterOptions): Adapter {
  const { config } = options;
  const doFetch = options.fetch ?? fetch;
  const info = { name: 'farebox', title: 'Farebox', version: PACKAGE_VERSION };
  const handles: StdioServerHandle[] = [];
  const serve = (factory: () => McpServer | Server) => (serveOptions?: ServeStdioOptions) => {
    const handle = serveStdio(factory, serveOptions);
    handles.push(handle);
    return handle;
  };
  const closeHandles = async () => {
    for (const h of handles.splice(0)) await h.close().catch(() => undefined);
  };
  if (config.apiKey) {
    // A paid call may take as long as the service does: the gateway bounds it.
    const api = createGatewayClient({ baseUrl: config.url, apiKey: config.apiKey, fetch: doFetch, timeoutMs: 10 * 60_000 });
    const createServer = () => {
      const server = new McpServer(info, { instructions: MCP_INSTRUCTIONS });
      registerRestTools(server, config, api);
      return server;
    };
    return { createServer, serve: serve(createServer), session: undefined, close: closeHandles };
  }
  const session = createOAuthSession({
    mcpUrl: config.mcpUrl,
    tokenPath: config.tokenPath,
    clientName: config.clientName,
    openBrowser: config.openBrowser,
    ...(options.log ? { log: options.log } : {}),
    ...options.oauth,
  });
  const remote = upstream(config, session, doFetch);
  // Forward tools/list and tools/call as they are: the gateway owns the tools.
  const createServer = () => {
    const server = new Server(info, { instructions: MCP_INSTRUCTIONS, capabilities: { tools: {} } });
    server.setRequestHandler('tools/list', async (request) => {
      try {
        const client = await remote.connect();
        return await client.listTools(request.params);
      } catch (e) {
        throw new ProtocolError(ProtocolErrorCode.InternalError, `Farebox: ${message(e)}`);
      }
    });
    server.setRequestHandler('tools/call', async (request): Promise<ToolResult> => {
      let client: Client;
      try {
        client = await remote.connect();
      } catch (e) {
        return toolError(`Farebox: ${message(e)}`) as ToolResult;
      }
      try {
        return await client.callTool(request.params);
      } catch (e) {
        if (e instanceof ProtocolError) throw e;
        return toolError(`Farebox: ${message(e)}`) as ToolResult;
      }
    });
    return server;
  };
  return {
    createServer,
    serve: serve(createServer),
    session,
    async close() {
      await remote.close();
      await closeHandles();
    },
  };
}
