// The checkout's commands: `pnpm farebox ...`, `pnpm farebox-mcp`,
// `pnpm farebox-devnet ...` (and `pnpm exec` / `npx` of the same names) from
// the repository's root reach these launchers, linked into node_modules/.bin
// by the root package.json (`"farebox-checkout-bin": "link:scripts/bin"`).
// Each runs the real program, the built bin of its workspace package, with
// the arguments, standard streams and working folder it was given, and exits
// with its code. A program not built yet (a fresh clone before `npm start` or
// `pnpm build`) is built first, it and the workspace packages it needs, with
// the build's output on stderr (stdout stays the program's: `--json`, MCP).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The pnpm that runs this launcher (`pnpm farebox` sets npm_execpath), else the one on the PATH. */
function pnpm() {
  const execPath = process.env.npm_execpath;
  return execPath && basename(execPath).startsWith('pnpm') ? { command: process.execPath, args: [execPath] } : { command: 'pnpm', args: [] };
}

/**
 * Runs `bin` (a path inside the repository, `apps/cli/dist/cli.js`) of the
 * workspace package `name` with this process's arguments.
 */
export function launch(name, bin) {
  const target = join(root, bin);
  if (!existsSync(target)) {
    process.stderr.write(`${basename(bin)} is not built yet: building ${name} and the packages it needs (once; \`pnpm build\` builds everything)...\n`);
    const { command, args } = pnpm();
    const built = spawnSync(command, [...args, '--filter', `${name}...`, 'run', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
    if (built.status !== 0 || !existsSync(target)) {
      process.stderr.write(
        `the build of ${name} failed${built.error ? ` (${built.error.message})` : ''}: run \`pnpm install\` and \`pnpm build\` in ${root}\n`,
      );
      process.exit(1);
    }
  }
  const child = spawn(process.execPath, [target, ...process.argv.slice(2)], { stdio: 'inherit' });
  // Ctrl-C reaches the program from the terminal itself; a signal sent to this launcher alone is passed on.
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
