import { Command, Option } from 'commander';
import { COMMAND_GROUPS } from './commands/index.js';
import type { Cli, CommandResult } from './commands/shared.js';
import { createContext, type Context, type GlobalOptions } from './context.js';
import { CliError } from './errors.js';
import { toJson } from './format.js';
import { cliMessage } from './hints.js';

export interface ProgramIO {
  env?: Record<string, string | undefined>;
  stdout?: (text: string) => void;
  stderr?: (text: string) => void;
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Set by every action: 0 on success, 1 on a failure, 2 on bad usage. */
  setExitCode?: (code: number) => void;
}

/**
 * The `farebox` command. Each action only parses, calls a `run*()` function,
 * prints (human text, or JSON with `--json`) and sets the exit code; errors go
 * to stderr.
 */
export function buildProgram(io: ProgramIO = {}): Command {
  const env = io.env ?? process.env;
  const out = io.stdout ?? ((t: string) => process.stdout.write(t));
  const err = io.stderr ?? ((t: string) => process.stderr.write(t));
  const setExit = io.setExitCode ?? ((code: number) => void (process.exitCode = code));
  const program = new Command('farebox')
    .description('Farebox from the terminal: find and call paid services, manage your account, publish your own.')
    .version('0.1.0')
    .addOption(new Option('--url <url>', 'gateway address (default: FAREBOX_URL, the stored login, or http://127.0.0.1:8787)'))
    .addOption(new Option('--api-key <key>', 'API key for this command (default: FAREBOX_API_KEY or the stored login)'))
    .option('--json', 'print JSON for scripts')
    .showHelpAfterError()
    .configureOutput({ writeOut: out, writeErr: err })
    .exitOverride((e) => {
      // Commander's own exits (help, version, usage errors): keep its code, never exit the host from here.
      throw e;
    });

  const globals = (): GlobalOptions => program.opts<GlobalOptions>();
  // Progress and notes on stderr say commands, not HTTP routes, too.
  const log = (line: string) => err(`${cliMessage(line)}\n`);

  function act<A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<CommandResult>) {
    return async (...args: A) => {
      let url: string | undefined;
      try {
        const ctx = await createContext(globals(), env, log);
        url = ctx.url;
        const r = await fn(ctx, ...args);
        out(`${ctx.json ? toJson(r.data) : r.human}\n`);
        setExit(0);
      } catch (e) {
        fail(e, url);
      }
    };
  }
  /** Every error line: the message in the CLI's words (commands, not HTTP routes), the HTTP status and the gateway's request id. */
  function fail(e: unknown, url?: string) {
    if (e instanceof CliError) {
      // The request id finds the gateway's log lines for this request.
      const requestId = typeof e.data.requestId === 'string' ? e.data.requestId : undefined;
      // A top-up's key: asking again with it never pays twice.
      const idempotencyKey = typeof e.data.idempotencyKey === 'string' ? e.data.idempotencyKey : undefined;
      const status = typeof e.data.status === 'number' ? e.data.status : undefined;
      const spendingLimit = e.data.spendingLimit;
      const message = cliMessage(e.message, url);
      // The gateway's answer as every surface gives it ({ error, code, ...details }), its message in the CLI's words
      // (a command where the gateway names an HTTP route); the CLI's own failures say theirs.
      const answer = { ...((e.data.answer as Record<string, unknown> | undefined) ?? { code: e.code }), error: message };
      if (globals().json)
        err(
          `${toJson({ ...answer, ...(status !== undefined ? { status } : {}), ...(requestId ? { requestId } : {}), ...(idempotencyKey ? { idempotencyKey } : {}), ...(spendingLimit ? { spendingLimit } : {}) })}\n`,
        );
      else {
        const where = [...(status !== undefined ? [`HTTP ${status}`] : []), ...(requestId ? [`request id ${requestId}`] : [])];
        err(`farebox: ${message}${where.length ? ` (${where.join(', ')})` : ''}\n`);
      }
      setExit(e.exitCode);
      return;
    }
    err(`farebox: ${cliMessage(e instanceof Error ? e.message : String(e), url)}\n`);
    setExit(1);
  }

  const cli: Cli = {
    act,
    run:
      (fn) =>
      async (...args) => {
        let url: string | undefined;
        try {
          const ctx = await createContext(globals(), env, log);
          url = ctx.url;
          setExit(await fn(ctx, ...args));
        } catch (e) {
          fail(e, url);
        }
      },
    stdin: io.stdin ?? process.stdin,
  };
  for (const group of COMMAND_GROUPS) group.register(program, cli);

  return program;
}

/** Parses `argv` (without node and the script) and runs the command. Resolves with the exit code. */
export async function runCli(argv: string[], io: ProgramIO = {}): Promise<number> {
  let code = 0;
  const program = buildProgram({ ...io, setExitCode: (c) => (code = c) });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (e) {
    const exit = (e as { exitCode?: unknown }).exitCode;
    return typeof exit === 'number' ? (exit === 1 ? 2 : exit) : 1;
  }
  return code;
}
