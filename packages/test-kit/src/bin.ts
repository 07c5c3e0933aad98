import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { ensureWorkspaceBuilt } from './build.js';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Running {
  /** stderr so far. */
  stderr(): string;
  done: Promise<RunResult>;
}

/**
 * Starts `command ...args` (asynchronously: a server under test may run in
 * this process) and collects its output.
 *
 * @example
 * const { code, stdout } = await start(process.execPath, [bin, '--help'], { env: {} }).done;
 */
export function start(command: string, args: string[], opts: { env: Record<string, string>; input?: string; cwd?: string }): Running {
  const child = spawn(command, args, { env: opts.env, cwd: opts.cwd ?? process.cwd(), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  if (opts.input !== undefined) child.stdin.end(opts.input);
  else child.stdin.end();
  const done = new Promise<RunResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
  return { stderr: () => stderr, done };
}

/**
 * The command `bin` of the workspace package `name`, found through the
 * package (its manifest's `bin`), as `from` resolves it: tests run what a
 * user installs, and no test reaches into another workspace by path.
 *
 * @example
 * const cli = binOf('@farebox/cli', 'farebox', import.meta.url);
 */
export function binOf(name: string, bin: string, from: string): { file: string; packageDir: string } {
  const manifest = createRequire(from).resolve(`${name}/package.json`);
  const bins = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin?: Record<string, string> }).bin ?? {};
  const file = bins[bin];
  if (!file) throw new Error(`${name} has no bin "${bin}"`);
  return { file: join(dirname(manifest), file), packageDir: dirname(manifest) };
}

/**
 * Builds what a spawned binary runs (CI builds first): `packageDir` when
 * `output` is missing or older than its sources, and before it every
 * workspace package it loads at run time whose build is older than its
 * sources, since a built binary imports their `dist/`, not their `src/`
 * (`ensureWorkspaceBuilt` in build.ts).
 */
export function ensureBuilt(packageDir: string, output: string): void {
  ensureWorkspaceBuilt(packageDir, output);
}
