import { Readable } from 'node:stream';
import { runCli } from '@farebox/cli';
import { binOf, ensureBuilt as build, start, type RunResult, type Running } from '@farebox/test-kit';

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

/**
 * Starts `farebox ...args` in this process: `runCli`, the binary's own body
 * (its parsing, run*() functions, output and exit codes), with its own
 * environment and stdin (not a terminal: `input`, else empty). The behaviour
 * tests use it; `farebox()` runs the built binary for what only it shows.
 */
export function startInProcess(args: string[], opts: { env: Record<string, string | undefined>; input?: string }): Running {
  let stdout = '';
  let stderr = '';
  const stdin = Object.assign(Readable.from(opts.input === undefined ? [] : [Buffer.from(opts.input)]), { isTTY: false });
  const done = runCli(args, { env: opts.env, stdin, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) }).then((code) => ({
    code,
    stdout,
    stderr,
  }));
  return { stderr: () => stderr, done };
}

/** `farebox ...args` in this process (startInProcess), resolved with its exit code and output. */
export function runFarebox(args: string[], opts: { env: Record<string, string | undefined>; input?: string }): Promise<RunResult> {
  return startInProcess(args, opts).done;
}
