import { Readable } from 'node:stream';
import { runCli } from '../src/index.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `farebox ...args` in this process: `runCli`, the binary's own body
 * (the same parsing, run*() functions, output and exit codes), with its own
 * environment and stdin (not a terminal; `input`, else empty). The built
 * binary itself is run by `farebox()` in bin.ts, for its entry point only.
 */
export async function cli(args: string[], opts: { env: Record<string, string | undefined>; input?: string }): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const stdin = Object.assign(Readable.from(opts.input === undefined ? [] : [Buffer.from(opts.input)]), { isTTY: false });
  const code = await runCli(args, { env: opts.env, stdin, stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) });
  return { code, stdout, stderr };
}
