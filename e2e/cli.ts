import { binOf, ensureBuilt as build, start, type RunResult } from '@farebox/test-kit';

export { start, type RunResult, type Running } from '@farebox/test-kit';

const cli = binOf('@farebox/cli', 'farebox', import.meta.url);
export const CLI_BIN = cli.file;

/** The tests run the built `farebox` (CI builds first); rebuilt when its sources, or those of a workspace package it loads, are newer than their builds. */
export function ensureBuilt(): void {
  build(cli.packageDir, CLI_BIN);
}

/** Runs `node <the farebox bin> ...args`. */
export function farebox(args: string[], opts: { env: Record<string, string>; input?: string; cwd?: string }): Promise<RunResult> {
  return start(process.execPath, [CLI_BIN, ...args], opts).done;
}
