import { DEFAULT_NETWORK, LOG_LEVELS, networkFromEnv, type LogLevel } from '@farebox/gateway-core';
import type { StartGatewayOptions } from './server.js';

/** What `farebox-gateway` reads from its environment, once, at start. */
export interface GatewayHostConfig {
  /**
   * The options `startGateway` gets. The host's own settings (listen
   * address, data directory, base URL, devnet) are read here; the gateway's
   * settings (`FAREBOX_*`, `DATABASE_URL`, `STELLAR_*`, `TRUSTLESS_WORK_*`) go
   * in `env` and are validated together by `@farebox/gateway-core`
   * (`resolveGatewayConfig`), every problem reported at once.
   */
  options: StartGatewayOptions;
  /** The network it names (`STELLAR_NETWORK`, the deprecated `FAREBOX_NETWORK`, else `testnet`). */
  network: string;
  /** Log lines: the level if valid (an invalid one is reported with the other problems) and readable (pretty) lines or JSON. */
  log: { level: LogLevel | undefined; pretty: boolean };
}

/**
 * The gateway host's one configuration reader: every environment variable
 * `farebox-gateway` uses is read here (README, Configuration), and nowhere
 * else in the host. `terminal` is whether stdout is a terminal (pretty logs
 * by default there).
 *
 * @example
 * const { options } = loadConfig(process.env, process.stdout.isTTY === true);
 * await startGateway(options);
 */
export function loadConfig(env: Record<string, string | undefined>, terminal = false): GatewayHostConfig {
  const level = env.FAREBOX_LOG_LEVEL || 'info';
  const pretty = env.FAREBOX_LOG_PRETTY ? env.FAREBOX_LOG_PRETTY === 'true' : terminal;
  return {
    options: {
      env,
      ...(env.HOST ? { host: env.HOST } : {}),
      ...(env.PORT ? { port: Number(env.PORT) } : {}),
    },
    network: networkFromEnv(env).network ?? DEFAULT_NETWORK,
    log: { level: (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : undefined, pretty },
  };
}
