#!/usr/bin/env node
// `pnpm farebox-mcp` from the checkout: the stdio MCP adapter (apps/mcp), built on first use (launch.mjs).
import { launch } from './launch.mjs';

launch('@farebox/mcp', 'apps/mcp/dist/main.js');
