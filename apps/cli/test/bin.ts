import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt as ensureBuiltKit, start, type RunResult } from '@farebox/test-kit';

export { start, type RunResult, type Running } from '@farebox/test-kit';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI_BIN = join(root, 'dist', 'cli.js');

/**
 * The spawned tests run the built `farebox` (CI builds first): it is rebuilt
 * when its sources are newer, and so is every workspace package it loads at
 * run time (@farebox/client, protocol, stellar, gateway-core for the operator
 * commands...) whose `dist/` is older than its `src/`.
 */
export function ensureBuilt(): void {
  ensureBuiltKit(root, CLI_BIN);
}

/** Runs `node dist/cli.js ...args`. */
export function farebox(args: string[], opts: { env: Record<string, string>; input?: string; cwd?: string }): Promise<RunResult> {
  return start(process.execPath, [CLI_BIN, ...args], opts).done;
}
