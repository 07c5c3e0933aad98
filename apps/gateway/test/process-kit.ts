import { spawn, type ChildProcess } from 'node:child_process';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';

/** `farebox-gateway` as an operator runs it (src/main.ts through tsx, the workspace's sources). */
export const GATEWAY_MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

/** The crash tests' entry: `farebox-gateway` that kills itself at a named point (its first argument). */
export const CRASH_MAIN = fileURLToPath(new URL('./crash-main.ts', import.meta.url));

/** `farebox-gateway` on a clock ahead of the machine's by its first argument (ms). */
export const CLOCK_MAIN = fileURLToPath(new URL('./clock-main.ts', import.meta.url));

/** A port nothing listens on now. */
export async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise((r) => s.close(r));
  return port;
}

export interface GatewayProcess {
  child: ChildProcess;
  /** Resolves with the exit code once the process is gone. */
  exited: Promise<number | null>;
  /** Resolves with the gateway's URL from its banner (rejects if it exits first). */
  started: Promise<string>;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
}

/**
 * Starts the gateway in its own process with exactly `env` (and PATH); with
 * `crashAt`, through the crash tests' entry, which kills it at that point;
 * with `clockAheadMs`, on a clock that far ahead of the machine's (time that
 * has passed for it: its holds' timeouts, its sessions).
 */
export function spawnGateway(env: Record<string, string>, options: { crashAt?: string; clockAheadMs?: number } = {}): GatewayProcess {
  const entry = options.crashAt
    ? [CRASH_MAIN, options.crashAt]
    : options.clockAheadMs !== undefined
      ? [CLOCK_MAIN, String(options.clockAheadMs)]
      : [GATEWAY_MAIN];
  // The local network unless the test names one (the gateway's default is testnet).
  const network = env.STELLAR_NETWORK || env.FAREBOX_NETWORK ? {} : { STELLAR_NETWORK: 'local' };
  const child = spawn(process.execPath, ['--conditions=@farebox/source', '--import', 'tsx', ...entry], {
    env: { PATH: process.env.PATH, ...network, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr!.on('data', (d) => (out += d));
  child.stdout!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const started = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', () => {
      const m = /Farebox gateway\s+(\S+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${out}`)));
  });
  started.catch(() => undefined);
  return { child, exited, started, output: () => out };
}
