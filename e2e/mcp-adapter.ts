import type { Readable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { binOf, ensureBuilt as build } from '@farebox/test-kit';

const adapter = binOf('@farebox/mcp', 'farebox-mcp', import.meta.url);
export const ADAPTER_BIN = adapter.file;

/** The tests run the built adapter, as npx would; build it when the sources are newer (CI builds first). */
export function ensureBuilt(): void {
  build(adapter.packageDir, ADAPTER_BIN);
}

export interface RunningAdapter {
  client: Client;
  /** Everything the adapter wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the first sign-in URL the adapter prints after `offset` characters of stderr. */
  signInUrl(offset?: number, timeoutMs?: number): Promise<string>;
  pid: number | null;
  close(): Promise<void>;
}

const SIGN_IN = /^ {2}(https?:\/\/\S+\/authorize\?\S+)$/m;

/** Starts `farebox-mcp` as a stdio subprocess and connects the official MCP SDK client to it. */
export async function startAdapter(env: Record<string, string>): Promise<RunningAdapter> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [ADAPTER_BIN],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BROWSER: 'none', ...env },
    stderr: 'pipe',
  });
  let text = '';
  const waiters = new Set<() => void>();
  (transport.stderr as Readable).on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const w of waiters) w();
  });
  const client = new Client({ name: 'adapter-test', version: '1.0.0' });
  await client.connect(transport);
  return {
    client,
    stderr: () => text,
    pid: transport.pid,
    signInUrl(offset = 0, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = SIGN_IN.exec(text.slice(offset));
          if (m) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(m[1]!);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no sign-in URL on the adapter's stderr within ${timeoutMs} ms; stderr so far:\n${text}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => client.close(),
  };
}
