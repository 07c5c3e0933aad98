import { z } from 'zod';
import type { Principal, User } from '../auth/accounts.js';
import type { CallResponse } from '../calls.js';
import { GatewayError } from '../errors.js';
import { requireScope, type OAuthScope } from '../oauth/scopes.js';

/** What the MCP tools need from the gateway core (the core satisfies it). */
export interface McpToolDeps {
  catalog: { list(q?: string): Promise<unknown[]> };
  calls: { call(principal: Principal, body: unknown): Promise<CallResponse> };
  account: {
    balance(user: User): Promise<unknown>;
    transactions(user: User, limit: unknown): Promise<unknown[]>;
  };
}

/** An MCP tool result: JSON text content plus the same value as structured content. */
export interface McpToolResult {
  [key: string]: unknown;
  content: Array<{ type: 'text'; text: string }>;
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

export interface McpTool<Shape extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  inputSchema: Shape;
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint: boolean };
  scope: OAuthScope;
  run(deps: McpToolDeps, principal: Principal, args: z.infer<z.ZodObject<Shape>>): Promise<Record<string, unknown>>;
}

const ok = (value: Record<string, unknown>): McpToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value });
const fail = (message: string, extra: Record<string, unknown> = {}): McpToolResult => ({
  content: [{ type: 'text', text: message }],
  structuredContent: { error: message, ...extra },
  isError: true,
});

const listAgents: McpTool<{ query: z.ZodOptional<z.ZodString> }> = {
  name: 'list_agents',
  title: 'Find paid services',
  description:
    'Search the Farebox catalog of paid services (AI agents, APIs, tools) that call_agent can call. ' +
    'Pass `query` as free text in any language (e.g. "translate to German", "weather forecast") to get the best matches first; ' +
    'omit it to list the whole catalog. Each result has the service name to pass to call_agent, its description ' +
    '(which says what input the service expects), its price per call in USDC, its endpoint and usage stats.',
  inputSchema: { query: z.string().max(512).optional().describe('What you need, in plain words, any language. Omit to list every service.') },
  annotations: { readOnlyHint: true, openWorldHint: false },
  scope: 'agents:read',
  async run(deps, _principal, args) {
    const services = await deps.catalog.list(args.query);
    return { services, count: services.length, ...(args.query ? { query: args.query } : {}) };
  },
};

const callAgent: McpTool<{ service: z.ZodString; payload: z.ZodRecord<z.ZodString, z.ZodUnknown> }> = {
  name: 'call_agent',
  title: 'Call a paid service',
  description:
    "Call a service from the catalog and pay its price from the user's Farebox credits. " +
    "Put the service's own input inside `payload` as a JSON object, shaped as the service's description says " +
    '(e.g. service "translate", payload {"text": "hello", "to": "de"}); do not put it at the top level. ' +
    "Returns the service's result, what the call cost, the remaining balance, and an explorer link when an on-chain transaction was produced. " +
    'A failed call is refunded. Use list_agents first to find the service name and its price.',
  inputSchema: {
    service: z.string().min(1).max(32).describe('The service name, exactly as list_agents returns it.'),
    payload: z.record(z.string(), z.unknown()).describe("The service's input, a JSON object as its description asks for."),
  },
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  scope: 'agents:call',
  async run(deps, principal, args) {
    const r = await deps.calls.call(principal, { service: args.service, payload: args.payload });
    const body = JSON.parse(r.body) as Record<string, unknown>;
    if (r.status !== 200) throw new GatewayError('UPSTREAM', typeof body.error === 'string' ? body.error : `call failed (${r.status})`, { refunded: true, callId: body.callId });
    return {
      service: args.service,
      result: body.result,
      cost: body.cost,
      paidWith: body.paidWith,
      newBalance: body.newBalance,
      ...(body.explorerUrl ? { explorerUrl: body.explorerUrl } : {}),
      callId: body.callId,
    };
  },
};

const getBalance: McpTool<Record<string, never>> = {
  name: 'get_balance',
  title: 'Check balance',
  description: "The user's Farebox balance: credits (spent first by call_agent) in USD and base units (1 USDC = 10,000,000), the on-chain USDC wallet, and the total.",
  inputSchema: {},
  annotations: { readOnlyHint: true, openWorldHint: false },
  scope: 'account:read',
  async run(deps, principal) {
    return (await deps.account.balance(principal.user)) as Record<string, unknown>;
  },
};

const getTransactions: McpTool<Record<string, never>> = {
  name: 'get_transactions',
  title: 'Recent transactions',
  description: "The user's most recent Farebox transactions, newest first: top-ups and paid calls, with amounts, the service called, status and explorer links when available.",
  inputSchema: {},
  annotations: { readOnlyHint: true, openWorldHint: false },
  scope: 'account:read',
  async run(deps, principal) {
    const transactions = await deps.account.transactions(principal.user, 50);
    return { transactions, count: transactions.length };
  },
};

/** The four tools of the spec's table, in order. */
export const MCP_TOOLS = [listAgents, callAgent, getBalance, getTransactions] as const;

/**
 * Runs one tool for a principal: checks the connection's scope, turns every
 * failure into an MCP tool error carrying the gateway's message.
 */
export async function runMcpTool(tool: McpTool, deps: McpToolDeps, principal: Principal, args: unknown): Promise<McpToolResult> {
  try {
    requireScope(principal, tool.scope);
    const parsed = z.object(tool.inputSchema).safeParse(args ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      return fail(`invalid arguments: ${issue?.path.join('.') || 'input'}: ${issue?.message ?? 'invalid'}`);
    }
    return ok(await tool.run(deps, principal, parsed.data));
  } catch (err) {
    if (err instanceof GatewayError) return fail(err.message, { code: err.code, ...(err.data ?? {}) });
    throw err;
  }
}
