// The Farebox MCP tools, defined once (input schema, description, handler
// over a `FareboxApi`), served by the gateway's `/mcp` (over the gateway core
// in process) and by the stdio adapter (over the REST client). Zod only, like
// the rest of the contract, so both hosts reach them without reaching each
// other.
import { z } from 'zod';
import { Balance, Cost, Service, Transaction } from './schemas.js';

/**
 * What the MCP tools need from Farebox. Two implementations: the gateway core
 * in process (the gateway's `/mcp`, for one signed-in principal) and the REST
 * `GatewayClient` of `@farebox/client` (the stdio adapter with an API key),
 * which satisfies it as it is.
 */
export interface FareboxApi {
  agents: {
    list(): Promise<unknown[]>;
    search(query: string): Promise<unknown[]>;
  };
  /** A paid call; a failure throws (and is refunded). */
  call(
    service: string,
    payload: Record<string, unknown>,
  ): Promise<{ result: unknown; cost: unknown; paidWith: unknown; newBalance: unknown; explorerUrl?: string | undefined; callId?: string | undefined }>;
  balance(): Promise<Record<string, unknown>>;
  transactions(options?: { limit?: number }): Promise<unknown[]>;
}

/** The OAuth scope a connection needs for a tool (checked by the gateway's `/mcp`). */
export type McpToolScope = 'agents:read' | 'agents:call' | 'account:read';

/** An MCP tool result: JSON text content plus the same value as structured content. */
export interface McpToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
  isError?: boolean;
}

/** An MCP tool icon (MCP 2025-11-25 `Icon`). */
export interface McpIcon {
  src: string;
  mimeType: string;
  sizes: string[];
}

/** The four behaviour hints of an MCP tool, each as true of the tool. */
export interface McpToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface McpTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: Shape;
  /** What the tool's `structuredContent` holds (the same JSON is its text content). */
  outputSchema: z.ZodObject;
  annotations: McpToolAnnotations;
  icons: McpIcon[];
  scope: McpToolScope;
  run(api: FareboxApi, args: z.infer<z.ZodObject<Shape>>): Promise<Record<string, unknown>>;
}

/** A 24x24 line icon (SVG path data) as a data: URI, so a client shows it without reaching any server. */
const icon = (paths: string): McpIcon[] => [
  {
    src: `data:image/svg+xml;base64,${btoa(
      `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="#1d4ed8" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">${paths}</svg>`,
    )}`,
    mimeType: 'image/svg+xml',
    sizes: ['any'],
  },
];

// Output schemas: the REST resources of `schemas.ts`, loose (a newer gateway may add fields; a client must not refuse them).
const ServiceOut = Service.loose();
const CostOut = Cost.loose();
const TransactionOut = Transaction.loose();
const BalanceOut = Balance.loose();

/** The server instructions every Farebox MCP server sends at initialisation. */
export const MCP_INSTRUCTIONS =
  "Farebox lets you find and call paid services (AI agents, APIs, tools) and pay per call from the user's Farebox credits. " +
  "Use list_agents to find a service, then call_agent with its name and the service's input inside `payload`. " +
  'get_balance and get_transactions show what is left and what was spent.';

/** How many transactions `get_transactions` shows. */
const TRANSACTIONS_SHOWN = 50;

/** A bad argument the tool finds itself (a cursor it did not write): a tool error with `code` BAD_REQUEST. */
export class ToolInputError extends Error {
  override name = 'ToolInputError';
}

/** How many services a `list_agents` page holds by default, and at most. */
const AGENTS_PAGE = 50;
const AGENTS_PAGE_MAX = 100;

/** Where the next page of a listing starts: after `after` (a service name) of the listing for `q`. */
interface AgentsCursor {
  q: string;
  after: string;
  /** The last service's `createdAt`: where the catalog's order resumes when that service is gone. */
  t: number;
}

const encodeCursor = (c: AgentsCursor) => btoa(JSON.stringify(c)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

function decodeCursor(cursor: string, q: string): AgentsCursor {
  let c: Partial<AgentsCursor> | undefined;
  try {
    c = JSON.parse(atob(cursor.replace(/-/g, '+').replace(/_/g, '/'))) as Partial<AgentsCursor>;
  } catch {
    c = undefined;
  }
  if (!c || typeof c.after !== 'string' || typeof c.q !== 'string' || typeof c.t !== 'number')
    throw new ToolInputError('invalid cursor: pass the nextCursor of the previous list_agents answer as it was');
  if (c.q !== q) throw new ToolInputError('invalid cursor: it continues another query; pass the same query as the first page');
  return c as AgentsCursor;
}

/**
 * One page of a listing: the services after the cursor's, in the listing's
 * order. A catalog listing (newest first, then by name) resumes where the
 * cursor's service stood even when it has gone; a search resumes after its
 * service, or says to search again when it dropped out.
 */
function agentsPage(services: unknown[], q: string, cursor: string | undefined, limit: number): { page: unknown[]; nextCursor?: string } {
  const rows = services as Array<{ service: string; createdAt: number }>;
  let start = 0;
  if (cursor !== undefined) {
    const c = decodeCursor(cursor, q);
    const at = rows.findIndex((s) => s.service === c.after);
    if (at >= 0) start = at + 1;
    else if (q === '') start = rows.findIndex((s) => s.createdAt < c.t || (s.createdAt === c.t && s.service > c.after));
    else throw new ToolInputError('invalid cursor: the results of this query changed; search again without cursor');
    if (start < 0) start = rows.length;
  }
  const page = rows.slice(start, start + limit);
  const last = page[page.length - 1];
  return { page, ...(last && start + limit < rows.length ? { nextCursor: encodeCursor({ q, after: last.service, t: last.createdAt }) } : {}) };
}

const listAgents: McpTool<{ query: z.ZodOptional<z.ZodString>; cursor: z.ZodOptional<z.ZodString>; limit: z.ZodOptional<z.ZodNumber> }> = {
  name: 'list_agents',
  title: 'Find paid services',
  description:
    'Search the Farebox catalog of paid services (AI agents, APIs, tools) that call_agent can call. ' +
    'Pass `query` as free text in any language (e.g. "translate to German", "weather forecast") to get the best matches first; ' +
    'omit it to list the whole catalog, newest first. Each result has the service name to pass to call_agent, its description ' +
    '(which says what input the service expects), its price per call in USDC, its endpoint and usage stats. ' +
    `Answers come in pages of ${AGENTS_PAGE} (\`limit\` up to ${AGENTS_PAGE_MAX}); when there are more, pass the answer's \`nextCursor\` as \`cursor\` (with the same query) for the next page.`,
  inputSchema: {
    query: z.string().max(512).optional().describe('What you need, in plain words, any language. Omit to list every service.'),
    cursor: z.string().max(1024).optional().describe("The previous answer's nextCursor, for the next page."),
    limit: z.number().int().min(1).max(AGENTS_PAGE_MAX).optional().describe(`How many services a page holds (default ${AGENTS_PAGE}).`),
  },
  outputSchema: z.looseObject({
    services: z.array(ServiceOut).describe('The matching services, best first (the catalog newest first without a query): this page.'),
    count: z.number().int().describe('How many services this page holds.'),
    query: z.string().optional(),
    nextCursor: z.string().optional().describe('Present when there are more: pass it as cursor for the next page.'),
  }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: icon('<circle cx="11" cy="11" r="7"/><path d="m20 20-3.5-3.5"/>'),
  scope: 'agents:read',
  async run(api, args) {
    const q = args.query?.trim() ? args.query : '';
    const all = q ? await api.agents.search(q) : await api.agents.list();
    const { page, nextCursor } = agentsPage(all, q, args.cursor, args.limit ?? AGENTS_PAGE);
    return { services: page, count: page.length, ...(q ? { query: q } : {}), ...(nextCursor ? { nextCursor } : {}) };
  },
};

const callAgent: McpTool<{ service: z.ZodString; payload: z.ZodRecord<z.ZodString, z.ZodUnknown>; approval_id: z.ZodOptional<z.ZodString> }> = {
  name: 'call_agent',
  title: 'Call a paid service',
  description:
    "Call a service from the catalog and pay its price from the user's Farebox credits. " +
    "Put the service's own input inside `payload` as a JSON object, shaped as the service's description says " +
    '(e.g. service "translate", payload {"text": "hello", "to": "de"}); do not put it at the top level. ' +
    "Returns the service's result, what the call cost, the remaining balance, and an explorer link when an on-chain transaction was produced. " +
    'A failed call is refunded. Use list_agents first to find the service name and its price. ' +
    'A call above the price the user set for this connection asks the user first; when the client cannot ask, the error names an approval link: ' +
    'give it to the user and, once they approved, call again with the same service and `approval_id`.',
  inputSchema: {
    service: z.string().min(1).max(32).describe('The service name, exactly as list_agents returns it.'),
    payload: z.record(z.string(), z.unknown()).describe("The service's input, a JSON object as its description asks for."),
    approval_id: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe('Only when retrying a call the user approved on the Farebox dashboard: the approval_id the earlier answer named.'),
  },
  outputSchema: z.looseObject({
    service: z.string(),
    result: z.unknown().describe("The service's own answer."),
    cost: CostOut.describe('What the call cost.'),
    paidWith: z.enum(['credit', 'wallet']),
    newBalance: CostOut.describe('What is left to spend after the call.'),
    explorerUrl: z.string().optional().describe('The on-chain transaction of the call, when one was produced.'),
    callId: z.string().optional(),
  }),
  // Spends credits (not idempotent: each call pays again) but overwrites or deletes nothing; reaches a third-party service.
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  icons: icon('<path d="M13 2 3 14h9l-1 8 10-12h-9l1-8z"/>'),
  scope: 'agents:call',
  async run(api, args) {
    const r = await api.call(args.service, args.payload);
    return {
      service: args.service,
      result: r.result,
      cost: r.cost,
      paidWith: r.paidWith,
      newBalance: r.newBalance,
      ...(r.explorerUrl ? { explorerUrl: r.explorerUrl } : {}),
      callId: r.callId,
    };
  },
};

const getBalance: McpTool<Record<string, never>> = {
  name: 'get_balance',
  title: 'Check balance',
  description:
    "The user's Farebox balance: credits (spent first by call_agent) in USD and base units (1 USDC = 10,000,000), the on-chain USDC wallet, and the total.",
  inputSchema: {},
  outputSchema: BalanceOut,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: icon('<rect x="2" y="6" width="20" height="14" rx="2"/><path d="M16 13h2M2 10h20"/>'),
  scope: 'account:read',
  run: (api) => api.balance(),
};

const getTransactions: McpTool<Record<string, never>> = {
  name: 'get_transactions',
  title: 'Recent transactions',
  description:
    "The user's most recent Farebox transactions, newest first: top-ups and paid calls, with amounts, the service called, status and explorer links when available.",
  inputSchema: {},
  outputSchema: z.looseObject({ transactions: z.array(TransactionOut).describe('Newest first.'), count: z.number().int() }),
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  icons: icon('<path d="M8 6h13M8 12h13M8 18h13M3 6h.01M3 12h.01M3 18h.01"/>'),
  scope: 'account:read',
  async run(api) {
    const transactions = await api.transactions({ limit: TRANSACTIONS_SHOWN });
    return { transactions, count: transactions.length };
  },
};

/** The four tools of the spec's table, in order. */
export const MCP_TOOLS: readonly McpTool[] = [listAgents, callAgent, getBalance, getTransactions] as readonly McpTool[];

export const toolResult = (value: Record<string, unknown>): McpToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(value, null, 2) }],
  structuredContent: value,
});

/** Where a tool error carries its details (`{ error, code, callId, refunded, requestId, ... }`): the result's `_meta`. */
export const TOOL_ERROR_META = 'farebox/error';

/**
 * Where a `tools/call` of `call_agent` carries its idempotency key (the
 * request's `params._meta`, 1 to 255 characters): the `/mcp` counterpart of
 * `POST /v1/call`'s `Idempotency-Key`. A retry under the same key is charged
 * once and answers the first attempt's outcome (docs/api.md, "Idempotency").
 */
export const IDEMPOTENCY_KEY_META = 'farebox/idempotencyKey';

/**
 * A tool error: the message as text, the details under `_meta["farebox/error"]`.
 * No `structuredContent`: it would have to match the tool's output schema, and
 * clients check it even on errors.
 */
export const toolError = (message: string, extra: Record<string, unknown> = {}): McpToolResult => ({
  content: [{ type: 'text', text: message }],
  _meta: { [TOOL_ERROR_META]: { error: message, ...extra } },
  isError: true,
});

/**
 * A result other than a tool result that the server's SDK sends as is: an
 * `input_required` result (MCP 2026-07-28: the client asks the user, then
 * retries the call with the answers).
 */
export interface McpOtherResult {
  [key: string]: unknown;
  resultType: 'input_required';
}

/** How a host runs the tools: its errors, and a check before each tool (the gateway's scope check). */
export interface McpToolHost {
  /** Turns a failure into a tool error; `undefined` rethrows it (a protocol error). */
  onError(err: unknown): McpToolResult | undefined;
  /** Runs before the tool (after argument validation); a throw goes to `onError`. */
  before?(tool: McpTool): void;
  /**
   * Runs the tool in the host's way (the gateway: a paid call the user
   * confirms first): gets the validated arguments, the SDK's request context
   * and `run`, which runs the tool over `api` (default: the registered one).
   * A throw goes to `onError`.
   */
  around?(
    tool: McpTool,
    args: Record<string, unknown>,
    context: unknown,
    run: (api?: FareboxApi) => Promise<McpToolResult>,
  ): Promise<McpToolResult | McpOtherResult>;
}

/** Runs one tool: validates the arguments, runs it over `api`, and turns a failure into an MCP tool error. */
export async function runMcpTool(tool: McpTool, api: FareboxApi, args: unknown, host: McpToolHost, context?: unknown): Promise<McpToolResult | McpOtherResult> {
  try {
    host.before?.(tool);
    const parsed = z.object(tool.inputSchema).safeParse(args ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return toolError(`invalid arguments: ${issue?.path.join('.') || 'input'}: ${issue?.message ?? 'invalid'}`, { code: 'BAD_REQUEST' });
    }
    const run = async (over: FareboxApi = api) => toolResult(await tool.run(over, parsed.data));
    return await (host.around ? host.around(tool, parsed.data, context, run) : run());
  } catch (err) {
    if (err instanceof ToolInputError) return toolError(err.message, { code: 'BAD_REQUEST' });
    const result = host.onError(err);
    if (result) return result;
    throw err;
  }
}

/**
 * Decides, before a tool runs, whether the caller's OAuth token lacks the
 * tool's scope: the server then answers HTTP 403 `insufficient_scope` naming
 * it (the SDK's per-tool scope challenge). No `authInfo` (the stdio adapter
 * with an API key): no challenge.
 */
export type McpScopeChallenge = (context: { authInfo?: { scopes: string[] } }) => { scopes: [string, ...string[]]; errorDescription?: string } | undefined;

/** The scope challenge of a tool: its scope, when the token lacks it. */
export const scopeChallengeOf =
  (tool: McpTool): McpScopeChallenge =>
  ({ authInfo }) =>
    authInfo && !authInfo.scopes.includes(tool.scope)
      ? { scopes: [tool.scope], errorDescription: `this connection was not granted the ${tool.scope} scope` }
      : undefined;

/** Where an MCP server registers its tools (the `McpServer` of `@modelcontextprotocol/server` has this method). */
export interface ToolRegistry {
  registerTool(
    name: string,
    config: {
      title: string;
      description: string;
      inputSchema: z.ZodObject;
      outputSchema: z.ZodObject;
      annotations: Record<string, unknown>;
      icons: McpIcon[];
      scopeChallenge: McpScopeChallenge;
    },
    // biome-ignore lint/suspicious/noExplicitAny: each SDK types the arguments and its request context
    handler: (args: any, context: any) => Promise<McpToolResult | McpOtherResult>,
  ): unknown;
}

/**
 * Registers the four tools on an MCP server, run over `api`.
 *
 * @example
 * registerMcpTools(server, createGatewayClient({ baseUrl, apiKey }), { onError: (e) => toolError(String(e)) });
 */
export function registerMcpTools(server: ToolRegistry, api: FareboxApi, host: McpToolHost): void {
  for (const tool of MCP_TOOLS) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: z.object(tool.inputSchema),
        outputSchema: tool.outputSchema,
        annotations: { title: tool.title, ...tool.annotations },
        icons: tool.icons,
        scopeChallenge: scopeChallengeOf(tool),
      },
      (args: unknown, context: unknown) => runMcpTool(tool, api, args, host, context),
    );
  }
}
