import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const CLI_BIN = join(root, 'dist', 'cli.js');

function newest(dir: string): number {
  let t = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    t = Math.max(t, s.isDirectory() ? newest(p) : s.mtimeMs);
  }
  return t;
}

/** The tests run the built `farebox` (CI builds first); rebuild when the sources are newer. */
export function ensureBuilt(): void {
  if (existsSync(CLI_BIN) && statSync(CLI_BIN).mtimeMs >= newest(join(root, 'src'))) return;
  execFileSync('pnpm', ['exec', 'tsup'], { cwd: root, stdio: 'ignore' });
}

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

/** Starts `node dist/cli.js ...args` (asynchronously: the gateway under test runs in this process). */
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

export function farebox(args: string[], opts: { env: Record<string, string>; input?: string; cwd?: string }): Promise<RunResult> {
  return start(process.execPath, [CLI_BIN, ...args], opts).done;
}
