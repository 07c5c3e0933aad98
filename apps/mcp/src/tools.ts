import { z } from 'zod';

/**
 * The four tools of the spec, as the gateway's `/mcp` declares them. In
 * API-key mode the adapter serves them itself over the REST API (the remote
 * `/mcp` takes OAuth tokens only); a test checks that both lists are identical.
 */
export const TOOL_DEFINITIONS = {
  list_agents: {
    title: 'Find paid services',
    description:
      'Search the Farebox catalog of paid services (AI agents, APIs, tools) that call_agent can call. ' +
      'Pass `query` as free text in any language (e.g. "translate to German", "weather forecast") to get the best matches first; ' +
      'omit it to list the whole catalog. Each result has the service name to pass to call_agent, its description ' +
      '(which says what input the service expects), its price per call in USDC, its endpoint and usage stats.',
    inputSchema: { query: z.string().max(512).optional().describe('What you need, in plain words, any language. Omit to list every service.') },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  call_agent: {
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
  },
  get_balance: {
    title: 'Check balance',
    description: "The user's Farebox balance: credits (spent first by call_agent) in USD and base units (1 USDC = 10,000,000), the on-chain USDC wallet, and the total.",
    inputSchema: {},
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  get_transactions: {
    title: 'Recent transactions',
    description: "The user's most recent Farebox transactions, newest first: top-ups and paid calls, with amounts, the service called, status and explorer links when available.",
    inputSchema: {},
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
} as const;

export const INSTRUCTIONS =
  "Farebox lets you find and call paid services (AI agents, APIs, tools) and pay per call from the user's Farebox credits. " +
  'Use list_agents to find a service, then call_agent with its name and the service\'s input inside `payload`. ' +
  'get_balance and get_transactions show what is left and what was spent.';
