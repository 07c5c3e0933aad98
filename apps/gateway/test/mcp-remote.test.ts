import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { consent } from './oauth-browser.js';

const MCP_REMOTE = createRequire(import.meta.url).resolve('mcp-remote/dist/proxy.js');

/** A port nobody listens on now (mcp-remote's OAuth callback). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('mcp-remote (the stdio proxy desktop apps use for remote servers) against /mcp', () => {
  let h: Harness;
  let alice: TestUser;
  let configDir: string;

  beforeAll(async () => {
    h = await startHarness('pglite');
    alice = await h.user();
    await h.publish('echo', { price: '0.01' });
    configDir = mkdtempSync(join(tmpdir(), 'farebox-mcp-remote-'));
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    rmSync(configDir, { recursive: true, force: true });
  });

  it('registers, signs in through the consent page, lists the tools and makes a paid call', async () => {
    const port = await freePort();
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [MCP_REMOTE, `${h.url}/mcp`, String(port), '--host', '127.0.0.1'],
      // No browser here: mcp-remote prints the address; the test plays the browser.
      env: { PATH: '/nonexistent', HOME: configDir, MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: 'none' },
      stderr: 'pipe',
    });
    let stderr = '';
    (transport.stderr as Readable).on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const client = new Client({ name: 'desktop-app', version: '1.0.0' });
    const connected = client.connect(transport);
    const authorizeUrl = await new Promise<string>((resolve, reject) => {
      const started = Date.now();
      const poll = setInterval(() => {
        const m = /Please authorize this client by visiting:\s*(\S+)/.exec(stderr);
        if (m) {
          clearInterval(poll);
          resolve(m[1]!);
        } else if (Date.now() - started > 60_000) {
          clearInterval(poll);
          reject(new Error(`no authorization URL from mcp-remote; stderr:\n${stderr}`));
        }
      }, 50);
    });
    const { redirect, page } = await consent(h.url, authorizeUrl, alice);
    expect(page.html).toContain('MCP CLI Proxy');
    expect(redirect.origin).toBe(`http://127.0.0.1:${port}`);
    // The browser lands on mcp-remote's callback, which redeems the code.
    expect((await fetch(redirect)).status).toBe(200);
    await connected;

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
    const before = (await alice.api('/v1/balance')).body.balance_base_units as number;
    const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { via: 'mcp-remote' } } });
    expect(call.isError).toBeFalsy();
    expect(call.structuredContent).toMatchObject({ result: { echo: { via: 'mcp-remote' } }, cost: { base_units: 100_000 } });
    expect((await alice.api('/v1/balance')).body.balance_base_units).toBe(before - 100_000);
    await client.close();
  }, 120_000);
});
