#!/usr/bin/env node
// `farebox-mcp`: the stdio MCP adapter. stdout carries the MCP protocol, so
// everything for the user (the sign-in URL, errors) goes to stderr.
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { loadAdapterConfig } from './config.js';
import { AdapterError } from './errors.js';
import { createAdapter } from './server.js';

async function main(): Promise<void> {
  const config = loadAdapterConfig(process.env);
  const adapter = createAdapter({ config });
  const transport = new StdioServerTransport();
  let closing = false;
  const stop = (code: number) => {
    if (closing) return;
    closing = true;
    adapter.close().then(
      () => process.exit(code),
      () => process.exit(code),
    );
  };
  transport.onclose = () => stop(0);
  process.stdin.on('end', () => stop(0));
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  adapter.serve({ transport });
  process.stderr.write(
    `Farebox MCP adapter ${config.apiKey ? 'using an API key' : `signing in with OAuth (token at ${config.tokenPath})`}, gateway ${config.url}\n`,
  );
}

main().catch((e: unknown) => {
  process.stderr.write(`farebox-mcp: ${e instanceof AdapterError || e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
