import { Command, Option } from 'commander';
import * as c from './commands.js';
import { createContext, type Context, type GlobalOptions } from './context.js';
import { CliError } from './errors.js';
import { toJson } from './format.js';
import { runInit } from './init.js';
import { registerOperatorCommands } from './operator.js';
import { registerDiscoveryCommands, runDiscoverySearch } from './discovery.js';

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
  const log = (line: string) => err(`${line}\n`);

  function act<A extends unknown[]>(fn: (ctx: Context, ...args: A) => Promise<c.CommandResult>) {
    return async (...args: A) => {
      try {
        const ctx = await createContext(globals(), env, log);
        const r = await fn(ctx, ...args);
        out(`${ctx.json ? toJson(r.data) : r.human}\n`);
        setExit(0);
      } catch (e) {
        fail(e);
      }
    };
  }
  function fail(e: unknown) {
    if (e instanceof CliError) {
      // The request id finds the gateway's log lines for this request.
      const requestId = typeof e.data.requestId === 'string' ? e.data.requestId : undefined;
      // A top-up's key: asking again with it never pays twice.
      const idempotencyKey = typeof e.data.idempotencyKey === 'string' ? e.data.idempotencyKey : undefined;
      if (globals().json) err(`${toJson({ error: e.message, code: e.code, ...(typeof e.data.status === 'number' ? { status: e.data.status } : {}), ...(requestId ? { requestId } : {}), ...(idempotencyKey ? { idempotencyKey } : {}) })}\n`);
      else err(`farebox: ${e.message}${typeof e.data.status === 'number' ? ` (HTTP ${e.data.status}${requestId ? `, request id ${requestId}` : ''})` : ''}\n`);
      setExit(e.exitCode);
      return;
    }
    err(`farebox: ${e instanceof Error ? e.message : String(e)}\n`);
    setExit(1);
  }

  program
    .command('login')
    .description('sign in: through the browser (OAuth), or store an API key')
    .option('--api-key <key>', 'store this API key instead of signing in through the browser')
    .action((o: { apiKey?: string }) => {
      const key = o.apiKey ?? globals().apiKey;
      return act((ctx) => c.runLogin(ctx, key !== undefined ? { apiKey: key } : {}))();
    });
  program.command('logout').description('forget the stored credential').action(() => act((ctx) => c.runLogout(ctx))());
  program.command('whoami').description('the signed-in account').action(() => act((ctx) => c.runWhoami(ctx))());
  program.command('balance').description('credits and wallet balance').action(() => act((ctx) => c.runBalance(ctx))());
  program
    .command('topup <usd>')
    .description('add credits (USD, up to 1000): paid in USDC from your wallet, or free test credits on the devnet')
    .option('--idempotency-key <key>', 'the top-up happens once per key: running the command again with the same key shows the first answer instead of paying again (default: a new key, reused when the request is retried)')
    .action((amount: string, o: { idempotencyKey?: string }) => act((ctx) => c.runTopup(ctx, amount, o))());
  program
    .command('search [query]')
    .description('search the catalog (free text, any language); without a query, list every service')
    .option('--discovery <url>', 'ask this discovery backend instead of the gateway (no account needed)')
    .option('--limit <n>', 'with --discovery: at most this many results')
    .action((query: string | undefined, o: { discovery?: string; limit?: string }) => act((ctx) => (o.discovery !== undefined ? runDiscoverySearch(ctx, query, o.discovery, o) : c.runSearch(ctx, query)))());
  program
    .command('call <service> [payload]')
    .description('call a service; the payload (a JSON object) comes from the argument, --file, or stdin')
    .option('-f, --file <path>', 'read the payload from a file (- for stdin)')
    .option('--max-cost <usd>', 'refuse to pay more than this')
    .option('--idempotency-key <key>', 'retry-safe key: a retry with it is charged once')
    .option('--direct', 'pay directly from a local keypair through an on-chain escrow (not from credits)')
    .option('--keypair <path>', 'the payer keypair file for --direct (S... seed or JSON with "secret")')
    .option('--escrow-key <key>', 'escrow provider API key for --direct (default TRUSTLESS_WORK_API_KEY)')
    .action((service: string, payloadArg: string | undefined, o: { file?: string; maxCost?: string; idempotencyKey?: string; direct?: boolean; keypair?: string; escrowKey?: string }) =>
      act(async (ctx) => {
        const payload = await c.readPayload(payloadArg, o.file, io.stdin ?? process.stdin);
        if (o.direct) {
          if (!o.keypair) throw new CliError('USAGE', '--direct needs --keypair <path>');
          return c.runDirectCall(ctx, service, payload, { keypair: o.keypair, ...(o.maxCost ? { maxCost: o.maxCost } : {}), ...(o.escrowKey ? { escrowKey: o.escrowKey } : {}) });
        }
        if (o.keypair) throw new CliError('USAGE', '--keypair is for --direct calls');
        return c.runCall(ctx, service, payload, o);
      })(),
    );
  program
    .command('transactions')
    .description('recent top-ups and calls, newest first')
    .option('--limit <n>', '1 to 500 (default 50)')
    .action((o: { limit?: string }) => act((ctx) => c.runTransactions(ctx, o))());

  const keys = program.command('keys').description('API keys');
  keys.command('list', { isDefault: true }).description('live keys').action(() => act((ctx) => c.runKeysList(ctx))());
  keys.command('create <name>').description('create a key (shown once)').action((name: string) => act((ctx) => c.runKeysCreate(ctx, name))());
  keys.command('revoke <id>').description('revoke a key').action((id: string) => act((ctx) => c.runKeysRevoke(ctx, id))());

  const conns = program.command('connections').description('apps connected through OAuth (assistants, the MCP adapter)');
  conns.command('list', { isDefault: true }).description('connected apps').action(() => act((ctx) => c.runConnectionsList(ctx))());
  conns.command('revoke <id>').description('disconnect an app (its tokens stop working)').action((id: string) => act((ctx) => c.runConnectionsRevoke(ctx, id))());

  const pub = program.command('publisher').description('publish paid services and see what they earn');
  pub.command('activate <name>').description('become a publisher').action((name: string) => act((ctx) => c.runPublisherActivate(ctx, name))());
  pub
    .command('register')
    .description('register a service on the registry (signed by your account wallet)')
    .requiredOption('--service <name>', 'service name')
    .requiredOption('--price <usdc>', 'price per call in USDC, e.g. 0.01')
    .requiredOption('--endpoint <url>', 'https address of the service')
    .requiredOption('--description <text>', 'what it does and what input it expects')
    .action((o: { service: string; price: string; endpoint: string; description: string }) => act((ctx) => c.runPublisherRegister(ctx, o))());
  pub
    .command('update <service>')
    .description('change price, endpoint or description')
    .option('--price <usdc>')
    .option('--endpoint <url>')
    .option('--description <text>')
    .action((service: string, o: { price?: string; endpoint?: string; description?: string }) => act((ctx) => c.runPublisherUpdate(ctx, service, o))());
  pub.command('remove <service>').description('remove a service from the registry').action((service: string) => act((ctx) => c.runPublisherRemove(ctx, service))());
  pub.command('overview').description('earnings, pending payout, services').action(() => act((ctx) => c.runPublisherOverview(ctx))());
  pub
    .command('settlements')
    .description('payouts')
    .option('--limit <n>', '1 to 200')
    .action((o: { limit?: string }) => act((ctx) => c.runPublisherSettlements(ctx, o))());
  pub
    .command('analytics')
    .description('calls and earnings per day')
    .option('--days <n>', '1 to 90 (default 30)')
    .action((o: { days?: string }) => act((ctx) => c.runPublisherAnalytics(ctx, o))());

  program
    .command('init [dir]')
    .description('scaffold a new paid service (@farebox/provider) in dir (default: ./my-service)')
    .option('--name <service>', 'service name (default: the folder name)')
    .option('--price <usdc>', 'price per call in USDC (default 0.001)')
    .option('--description <text>')
    .action((dir: string | undefined, o: { name?: string; price?: string; description?: string }) => act(() => runInit(dir ?? 'my-service', o))());

  program
    .command('dev')
    .description('start the local stack (gateway + devnet): `npm start` in a Farebox checkout, else farebox-gateway')
    .option('--port <port>', 'gateway port (default 8787)')
    .action(async (o: { port?: string }) => {
      try {
        const ctx = await createContext(globals(), env, log);
        setExit(await c.runDev(ctx, o));
      } catch (e) {
        fail(e);
      }
    });

  const devnet = program.command('devnet').description('local devnet helpers');
  devnet
    .command('fund <address>')
    .description('fund an address with the friendbot (XLM; --usdc needs a USDC trustline)')
    .option('--usdc <n>', 'also pay this much USDC')
    .action((address: string, o: { usdc?: string }) => act((ctx) => c.runDevnetFund(ctx, address, o))());
  devnet
    .command('keypair <path>')
    .description('create (or reuse) a payer keypair file: funded, USDC trustline set, optional USDC; ready for call --direct')
    .option('--usdc <n>', 'pay it this much USDC')
    .action((path: string, o: { usdc?: string }) => act((ctx) => c.runDevnetKeypair(ctx, path, o))());

  program
    .command('model')
    .description('the search model')
    .command('fetch')
    .description('download the multilingual search model so the gateway searches offline')
    .option('--dir <path>', 'model folder (default FAREBOX_MODEL_DIR or ~/.cache/farebox/models)')
    .action((o: { dir?: string }) => act((ctx) => c.runModelFetch(ctx, o))());

  registerOperatorCommands(program, act);
  registerDiscoveryCommands(program, act);

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
