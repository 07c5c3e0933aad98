// The client under test of conformance.test.ts. The MCP conformance suite
// (`conformance client --command "node test/conformance-client.mjs"`) starts a
// mock MCP server and authorization server for one scenario, runs this with
// the mock's MCP URL as its last argument, then judges what it saw on the wire.
//
// It drives the real adapter as a user's MCP client does: `node dist/main.js`
// over stdio in OAuth mode (FAREBOX_URL = the mock, a fresh token file,
// BROWSER=none), lists the tools through it and calls the first one. The
// person at the browser is played too: every sign-in address the adapter
// prints on stderr is opened with fetch, which follows the mock authorization
// server's redirect to the adapter's loopback callback, as a browser would.
// Exit code 0 when the tool call answered, 1 otherwise (the adapter's error on
// stderr).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const mcpUrl = process.argv.at(-1);
if (!mcpUrl?.startsWith('http')) {
  process.stderr.write('usage: node test/conformance-client.mjs <mcp server url>\n');
  process.exit(2);
}
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dir = mkdtempSync(join(tmpdir(), 'farebox-mcp-conformance-'));

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [join(root, 'dist', 'main.js')],
  env: { PATH: process.env.PATH ?? '', FAREBOX_URL: mcpUrl, FAREBOX_TOKEN_PATH: join(dir, 'token.json'), BROWSER: 'none' },
  stderr: 'pipe',
});

/** The browser: opens the address and follows the redirects (to the adapter's callback). */
async function browse(address) {
  try {
    const res = await fetch(address);
    await res.text();
    process.stderr.write(`[browser] opened ${address}: ended at ${res.url} (${res.status})\n`);
  } catch (e) {
    process.stderr.write(`[browser] cannot open ${address}: ${e instanceof Error ? e.message : String(e)}\n`);
  }
}

let pending = '';
transport.stderr?.on('data', (chunk) => {
  process.stderr.write(chunk);
  pending += chunk.toString('utf8');
  for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
    const line = pending.slice(0, end);
    pending = pending.slice(end + 1);
    // The adapter prints the sign-in address alone on an indented line.
    const address = /^\s+(https?:\/\/\S+)$/.exec(line)?.[1];
    if (address) void browse(address);
  }
});

const client = new Client({ name: 'farebox-conformance-client', version: '1.0.0' });
let code = 0;
try {
  await client.connect(transport);
  const { tools } = await client.listTools();
  process.stdout.write(`tools: ${tools.map((t) => t.name).join(', ')}\n`);
  const tool = tools[0];
  if (!tool) throw new Error('the server listed no tools');
  const result = await client.callTool({ name: tool.name, arguments: {} });
  process.stdout.write(`${tool.name}: ${JSON.stringify(result.content)}\n`);
  if (result.isError) throw new Error(`${tool.name} answered an error`);
} catch (e) {
  process.stderr.write(`conformance client: ${e instanceof Error ? e.message : String(e)}\n`);
  code = 1;
} finally {
  await client.close().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
