import { registerMcpTools, toolError, type FareboxApi, type McpToolHost, type ToolRegistry } from '@farebox/contract';
import type { Principal, User } from '../auth/accounts.js';
import type { CallAnswer } from '../calls.js';
import { GatewayError } from '../errors.js';
import { requireScope } from '../oauth/scopes.js';

export { MCP_INSTRUCTIONS } from '@farebox/contract';

/** What the MCP tools need from the gateway core (the core satisfies it). */
export interface McpToolDeps {
  catalog: { list(q?: string): Promise<unknown[]> };
  calls: { call(principal: Principal, body: unknown): Promise<CallAnswer> };
  account: {
    balance(user: User): Promise<unknown>;
    transactions(user: User, limit: unknown): Promise<unknown[]>;
  };
}

/**
 * The Farebox API of one principal, in process: what the MCP tools of
 * `@farebox/contract` run over at the gateway's `/mcp`.
 */
export function mcpApi(deps: McpToolDeps, principal: Principal): FareboxApi {
  return {
    agents: {
      list: () => deps.catalog.list(),
      search: (query) => deps.catalog.list(query),
    },
    async call(service, payload) {
      const answer = await deps.calls.call(principal, { service, payload });
      if (!answer.ok) throw new GatewayError('UPSTREAM', answer.value.error, { refunded: true, callId: answer.value.callId });
      return answer.value as Awaited<ReturnType<FareboxApi['call']>>;
    },
    balance: async () => (await deps.account.balance(principal.user)) as Record<string, unknown>,
    transactions: (options = {}) => deps.account.transactions(principal.user, options.limit),
  };
}

/**
 * How `/mcp` runs a tool for `principal`: the connection's scope is checked
 * first; a gateway refusal becomes a tool error carrying its message and code.
 */
export function mcpToolHost(principal: Principal): McpToolHost {
  return {
    before: (tool) => requireScope(principal, tool.scope),
    onError: (err) => (err instanceof GatewayError ? toolError(err.message, { code: err.code, ...(err.data ?? {}) }) : undefined),
  };
}

/** Registers the MCP tools of `@farebox/contract` on a `/mcp` server, run as `principal`. */
export function registerGatewayMcpTools(server: ToolRegistry, deps: McpToolDeps, principal: Principal): void {
  registerMcpTools(server, mcpApi(deps, principal), mcpToolHost(principal));
}
