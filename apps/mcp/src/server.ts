import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { PACKAGE_NAME, PACKAGE_VERSION, type AdapterConfig } from './config.js';
import { createOAuthSession, oauthFetch, type OAuthSession, type OAuthSessionOptions } from '@farebox/client/oauth';
import { INSTRUCTIONS, TOOL_DEFINITIONS } from './tools.js';

export interface AdapterOptions {
  config: AdapterConfig;
  /** Messages for the user (default stderr). */
  log?: (line: string) => void;
  fetch?: typeof fetch;
  /** OAuth timings (tests shorten them). */
  oauth?: Pick<OAuthSessionOptions, 'signInTimeoutMs' | 'refreshMarginMs' | 'lock'>;
}

export interface Adapter {
  server: McpServer;
  /** The OAuth session (undefined in API-key mode). */
  session: OAuthSession | undefined;
  close(): Promise<void>;
}

type ToolResult = CallToolResult;

const ok = (value: Record<string, unknown>): ToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value });
const fail = (message: string, extra: Record<string, unknown> = {}): ToolResult => ({
  content: [{ type: 'text', text: message }],
  structuredContent: { error: message, ...extra },
  isError: true,
});

/** API-key mode: the tools over the REST API, shaped like the remote `/mcp` answers. */
function registerRestTools(server: McpServer, config: AdapterConfig, apiKey: string, doFetch: typeof fetch): void {
  async function rest(method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> | unknown[] | undefined; requestId: string }> {
    // Each request carries its own id: the gateway's logs (and the service's, for a call) are found by it.
    const sent = randomUUID();
    const res = await doFetch(`${config.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, accept: 'application/json', 'x-request-id': sent, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const requestId = res.headers.get('x-request-id') ?? sent;
    const text = await res.text();
    let json: Record<string, unknown> | unknown[] | undefined;
    try {
      json = text ? (JSON.parse(text) as Record<string, unknown> | unknown[]) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, json, requestId };
  }
  const errorOf = (r: { status: number; json: unknown; requestId: string }) => {
    const body = r.json && typeof r.json === 'object' && !Array.isArray(r.json) ? (r.json as Record<string, unknown>) : {};
    const message = typeof body.error === 'string' ? body.error : `the gateway answered HTTP ${r.status}`;
    return fail(`${message} (request id ${r.requestId})`, { status: r.status, requestId: r.requestId, ...(typeof body.callId === 'string' ? { callId: body.callId, refunded: true } : {}) });
  };
  const guard = (fn: () => Promise<ToolResult>) =>
    fn().catch((e: unknown) => fail(`cannot reach the Farebox gateway at ${config.url}: ${e instanceof Error ? e.message : String(e)}`));

  const d = TOOL_DEFINITIONS;
  server.registerTool('list_agents', { ...d.list_agents, annotations: { title: d.list_agents.title, ...d.list_agents.annotations } }, ({ query }) =>
    guard(async () => {
      const r = await rest('GET', `/v1/agents${query ? `?q=${encodeURIComponent(query)}` : ''}`);
      if (r.status !== 200 || !Array.isArray(r.json)) return errorOf(r);
      return ok({ services: r.json, count: r.json.length, ...(query ? { query } : {}) });
    }),
  );
  server.registerTool('call_agent', { ...d.call_agent, annotations: { title: d.call_agent.title, ...d.call_agent.annotations } }, ({ service, payload }) =>
    guard(async () => {
      const r = await rest('POST', '/v1/call', { service, payload });
      if (r.status !== 200 || !r.json || Array.isArray(r.json)) return errorOf(r);
      const b = r.json;
      return ok({
        service,
        result: b.result,
        cost: b.cost,
        paidWith: b.paidWith,
        newBalance: b.newBalance,
        ...(b.explorerUrl ? { explorerUrl: b.explorerUrl } : {}),
        callId: b.callId,
      });
    }),
  );
  server.registerTool('get_balance', { ...d.get_balance, annotations: { title: d.get_balance.title, ...d.get_balance.annotations } }, () =>
    guard(async () => {
      const r = await rest('GET', '/v1/balance');
      if (r.status !== 200 || !r.json || Array.isArray(r.json)) return errorOf(r);
      return ok(r.json);
    }),
  );
  server.registerTool('get_transactions', { ...d.get_transactions, annotations: { title: d.get_transactions.title, ...d.get_transactions.annotations } }, () =>
    guard(async () => {
      const r = await rest('GET', '/v1/transactions?limit=50');
      if (r.status !== 200 || !Array.isArray(r.json)) return errorOf(r);
      return ok({ transactions: r.json, count: r.json.length });
    }),
  );
}

/**
 * OAuth mode: a client of the gateway's `/mcp`, connected on first use (which
 * is when the browser sign-in happens), reconnected after a failure.
 */
function upstream(config: AdapterConfig, session: OAuthSession, doFetch: typeof fetch) {
  let connecting: Promise<Client> | undefined;
  const connect = () => {
    connecting ??= (async () => {
      const client = new Client({ name: PACKAGE_NAME, version: PACKAGE_VERSION });
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

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Creates the stdio adapter's MCP server: the four Farebox tools, bridged to
 * the gateway's `/mcp` with OAuth, or served over the REST API with an API key.
 *
 * @example
 * const adapter = createAdapter({ config: loadAdapterConfig() });
 * await adapter.server.connect(new StdioServerTransport());
 */
export function createAdapter(options: AdapterOptions): Adapter {
  const { config } = options;
  const doFetch = options.fetch ?? fetch;
  const server = new McpServer({ name: 'farebox', title: 'Farebox', version: PACKAGE_VERSION }, { instructions: INSTRUCTIONS, capabilities: { tools: {} } });
  if (config.apiKey) {
    registerRestTools(server, config, config.apiKey, doFetch);
    return { server, session: undefined, close: () => server.close() };
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
  server.server.setRequestHandler(ListToolsRequestSchema, async (request) => {
    try {
      const client = await remote.connect();
      return await client.listTools(request.params);
    } catch (e) {
      throw new McpError(ErrorCode.InternalError, `Farebox: ${message(e)}`);
    }
  });
  server.server.setRequestHandler(CallToolRequestSchema, async (request): Promise<ToolResult> => {
    let client: Client;
    try {
      client = await remote.connect();
    } catch (e) {
      return fail(`Farebox: ${message(e)}`);
    }
    try {
      return (await client.callTool(request.params)) as ToolResult;
    } catch (e) {
      if (e instanceof McpError) throw e;
      return fail(`Farebox: ${message(e)}`);
    }
  });
  return {
    server,
    session,
    async close() {
      await remote.close();
      await server.close();
    },
  };
}
