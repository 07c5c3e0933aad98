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

/** Every output of `farebox` run through this module in the current test file (what `printedRoutes` reads). */
const printed: Array<{ args: string[]; text: string }> = [];
const record = (args: string[]) => (r: RunResult) => {
  printed.push({ args, text: `${r.stdout}${r.stderr}` });
  return r;
};

/** An HTTP route as a message would name it (`POST /v1/...`, `GET /...`). */
export const HTTP_ROUTE = /\b(GET|POST|PUT|DELETE|PATCH) \//;

/** The runs so far whose output names an HTTP route (the CLI names its own commands instead), and how many runs there were. */
export function printedRoutes(): { runs: number; offenders: Array<{ args: string[]; text: string }> } {
  return { runs: printed.length, offenders: printed.filter((p) => HTTP_ROUTE.test(p.text)) };
}

/** Runs `node <the farebox bin> ...args`. */
export function farebox(args: string[], opts: { env: Record<string, string>; input?: string; cwd?: string }): Promise<RunResult> {
  return start(process.execPath, [CLI_BIN, ...args], opts).done.then(record(args));
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
  const done = runCli(args, { env: opts.env, stdin, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) })
    .then((code) => ({ code, stdout, stderr }))
    .then(record(args));
  return { stderr: () => stderr, done };
}

/** `farebox ...args` in this process (startInProcess), resolved with its exit code and output. */
export function runFarebox(args: string[], opts: { env: Record<string, string | undefined>; input?: string }): Promise<RunResult> {
  return startInProcess(args, opts).done;
}
