import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, ProtocolError, ProtocolErrorCode, Server, type CallToolResult } from '@modelcontextprotocol/server';
import { serveStdio, type ServeStdioOptions, type StdioServerHandle } from '@modelcontextprotocol/server/stdio';
import { PACKAGE_NAME, PACKAGE_VERSION, type AdapterConfig } from './config.js';
import { ClientError, createGatewayClient, GatewayApiError } from '@farebox/client/gateway';
import { IDEMPOTENCY_KEY_META, MCP_INSTRUCTIONS, registerMcpTools, TOOL_ERROR_META, toolError } from '@farebox/client/mcp';
import { createOAuthSession, oauthFetch, type OAuthSession, type OAuthSessionOptions } from '@farebox/client/oauth';

export interface AdapterOptions {
  config: AdapterConfig;
  /** Messages for the user (default stderr). */
  log?: (line: string) => void;
  fetch?: typeof fetch;
  /** OAuth timings (tests shorten them). */
  oauth?: Pick<OAuthSessionOptions, 'signInTimeoutMs' | 'refreshMarginMs' | 'lock'>;
  /**
   * OAuth mode: the longest wait, once, for a paid call the gateway says is
   * still in progress under its key (its `retryAfterSeconds`), default 20 000 ms.
   */
  callRetryWaitMs?: number;
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

/**
 * API-key mode: the tools of `@farebox/client/mcp` run here over the REST
 * client (the remote `/mcp` takes OAuth tokens only). A refusal carries the
 * gateway's message and the id of the request it answered.
 */
function registerRestTools(server: McpServer, config: AdapterConfig, api: ReturnType<typeof createGatewayClient>): void {
  const tools = {
    ...api,
    // The key's own budget next to the account's money, as the gateway's /mcp get_balance gives a connection's
    // (GET /v1/me names the calling credential's policy; docs/api.md, "Spending policies").
    async balance() {
      const [balance, me] = await Promise.all([api.balance(), api.me()]);
      const policy = me.credential?.policy;
      return { ...balance, ...(policy ? { spending_policy: policy } : {}) };
    },
  };
  registerMcpTools(server, tools, {
    onError(e) {
      if (e instanceof GatewayApiError) {
        // The gateway's answer as it gave it ({ error, code, ...details }: the fields /mcp gives for the same failure),
        // plus what this transport adds: the HTTP status and the request id (the gateway's log lines carry it).
        const requestId = e.requestId ?? 'unknown';
        const { error, ...fields } = e.answer;
        // Every error answer of a paid call names it; a 500 with a call id is a call that failed and was refunded.
        const refunded = typeof fields.callId === 'string' && e.status === 500 && fields.refunded === undefined ? { refunded: true } : {};
        const result = toolError(error, {
          ...fields,
          ...refunded,
          status: e.status,
          requestId,
          ...(typeof e.data.idempotencyKey === 'string' ? { idempotencyKey: e.data.idempotencyKey } : {}),
        });
        return { ...result, content: [{ type: 'text', text: `${error} (request id ${requestId})` }] };
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
    /** Drops the connection (after a lost request): the next call connects afresh. */
    reset() {
      const c = connecting;
      connecting = undefined;
      void c?.then((client) => client.close()).catch(() => undefined);
    },
    async close() {
      const c = connecting;
      connecting = undefined;
      await c?.then((client) => client.close()).catch(() => undefined);
    },
  };
}

type CallParams = Parameters<Client['callTool']>[0];

/** The details of a tool error the gateway answered (`_meta["farebox/error"]`). */
const errorDetails = (r: ToolResult) =>
  r.isError ? ((r._meta as Record<string, unknown> | undefined)?.[TOOL_ERROR_META] as Record<string, unknown> | undefined) : undefined;

/**
 * OAuth mode's `tools/call`, forwarded to the gateway's `/mcp`. A paid call
 * (`call_agent`) is retry-safe as `@farebox/client`'s: it carries an
 * idempotency key (`_meta["farebox/idempotencyKey"]`, the client's own or a
 * random UUID), is asked once more under it when the request failed without
 * an answer (the connection lost), and an attempt the gateway says is still
 * in progress under that key (CONFLICT with `retryAfterSeconds`) is waited
 * for once (at most `maxWaitMs`). So the answer is the call's one outcome,
 * charged once; when none comes, the error names the key.
 */
async function paidCallSafely(remote: ReturnType<typeof upstream>, params: CallParams, maxWaitMs: number): Promise<ToolResult> {
  const given = params._meta?.[IDEMPOTENCY_KEY_META];
  const key = params.name === 'call_agent' ? (typeof given === 'string' ? given : randomUUID()) : undefined;
  const sent: CallParams = key === undefined ? params : { ...params, _meta: { ...params._meta, [IDEMPOTENCY_KEY_META]: key } };
  const withKey = (r: ToolResult): ToolResult => {
    const details = errorDetails(r);
    return details && key !== undefined ? { ...r, _meta: { ...r._meta, [TOOL_ERROR_META]: { ...details, idempotencyKey: key } } } : r;
  };
  let resent = false;
  let waited = false;
  for (;;) {
    let client: Client;
    try {
      client = await remote.connect();
    } catch (e) {
      return toolError(`Farebox: ${message(e)}`, key ? { idempotencyKey: key } : {}) as ToolResult;
    }
    let answer: ToolResult;
    try {
      answer = (await client.callTool(sent)) as ToolResult;
    } catch (e) {
      if (e instanceof ProtocolError) throw e;
      if (key !== undefined && !resent) {
        // Lost before an answer: the gateway may have run it. The same key asks for that outcome (charged once).
        resent = true;
        remote.reset();
        continue;
      }
      const twice = key !== undefined ? ' (the call was asked twice without an answer: get_transactions shows whether it was charged)' : '';
      return toolError(`Farebox: ${message(e)}${twice}`, key ? { idempotencyKey: key } : {}) as ToolResult;
    }
    const details = errorDetails(answer);
    const retryAfter = Number(details?.retryAfterSeconds);
    if (key !== undefined && resent && !waited && details?.code === 'CONFLICT' && retryAfter > 0 && /in progress/.test(String(details.error))) {
      // The first attempt is still running: its outcome is the answer.
      waited = true;
      await sleep(Math.min(retryAfter * 1000, maxWaitMs));
      continue;
    }
    return withKey(answer);
  }
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
      // The tool list never changes: `tools.listChanged` is not advertised.
      const server = new McpServer(info, { instructions: MCP_INSTRUCTIONS, capabilities: { tools: { listChanged: false } } });
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
    server.setRequestHandler('tools/call', (request) => paidCallSafely(remote, request.params, options.callRetryWaitMs ?? 20_000));
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
