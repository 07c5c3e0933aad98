// `@farebox/client/mcp`: the Farebox MCP tools, defined once in
// `@farebox/contract` (input schema, description, handler over a
// `FareboxApi`), served by the gateway's `/mcp` (over the gateway core) and by
// the stdio adapter (over the REST client). Runtime-neutral: zod only.
export { MCP_TOOLS, MCP_INSTRUCTIONS, runMcpTool, registerMcpTools, toolResult, toolError, TOOL_ERROR_META, IDEMPOTENCY_KEY_META } from '@farebox/contract';
export type {
  FareboxApi,
  McpIcon,
  McpScopeChallenge,
  McpTool,
  McpToolAnnotations,
  McpToolHost,
  McpToolResult,
  McpToolScope,
  ToolRegistry,
} from '@farebox/contract';
