import type { Readable } from 'node:stream';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { binOf, ensureBuilt as build } from '@farebox/test-kit';

const adapter = binOf('@farebox/mcp', 'farebox-mcp', import.meta.url);
export const ADAPTER_BIN = adapter.file;

/** The tests run the built adapter, as npx would; build it when the sources are newer (CI builds first). */
export function ensureBuilt(): void {
  build(adapter.packageDir, ADAPTER_BIN);
}

/** What the tests ask of either SDK line's client. */
export type AdapterClient = Pick<Client, 'listTools' | 'callTool' | 'close'>;

export interface RunningAdapter {
  client: AdapterClient;
  /** The protocol revision the v2 client and the adapter agreed on (undefined with the v1 client). */
  protocolVersion: string | undefined;
  /** Everything the adapter wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the first sign-in URL the adapter prints after `offset` characters of stderr. */
  signInUrl(offset?: number, timeoutMs?: number): Promise<string>;
  pid: number | null;
  close(): Promise<void>;
}

const SIGN_IN = /^ {2}(https?:\/\/\S+\/authorize\?\S+)$/m;

/**
 * Starts `farebox-mcp` as a stdio subprocess and connects an official MCP SDK
 * client to it: the v1 line (`initialize`, 2025-11-25) by default, or the v2
 * line pinned to protocol 2026-07-28 (`server/discover`, no handshake).
 */
export async function startAdapter(env: Record<string, string>, options: { pin?: '2026-07-28' } = {}): Promise<RunningAdapter> {
  const params = {
    command: process.execPath,
    args: [ADAPTER_BIN],
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', BROWSER: 'none', ...env },
    stderr: 'pipe' as const,
  };
  const transport = options.pin ? new StdioV2(params) : new StdioClientTransport(params);
  let text = '';
  const waiters = new Set<() => void>();
  (transport.stderr as Readable).on('data', (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const w of waiters) w();
  });
  let client: AdapterClient;
  let protocolVersion: string | undefined;
  if (options.pin) {
    // Pinned: a subclass-free SDK stdio transport, so the pinned probe runs on this very connection.
    const v2 = new ClientV2({ name: 'adapter-test', version: '2.0.0' }, { versionNegotiation: { mode: { pin: options.pin } } });
    await v2.connect(transport as StdioV2);
    client = v2 as unknown as AdapterClient;
    protocolVersion = v2.getNegotiatedProtocolVersion();
  } else {
    const v1 = new Client({ name: 'adapter-test', version: '1.0.0' });
    await v1.connect(transport as StdioClientTransport);
    client = v1;
  }
  return {
    client,
    protocolVersion,
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
