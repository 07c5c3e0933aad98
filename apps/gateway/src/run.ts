// `farebox-gateway`'s body: starts the gateway (PGlite or DATABASE_URL, the
// embedded devnet on the local network), prints where everything is, and
// stops it on SIGINT/SIGTERM. `main.ts` runs it as is; the crash tests' entry
// script runs it with their crash hook.
import { ConfigError } from '@farebox/protocol';
import { createLogger, flushLogger, prettyLines } from '@farebox/gateway-core';
import { loadConfig } from './config.js';
import { startGateway, type RunningGateway, type StartGatewayOptions } from './server.js';

/** Runs the gateway as a process until a signal stops it. `extra` is for test entry scripts (a crash hook, a clock). */
export async function runGateway(extra: Pick<StartGatewayOptions, 'crashPoint' | 'now'> = {}): Promise<RunningGateway> {
  // Everything the gateway writes (database, keystore, cursors, devnet state) is
  // for this user only: files 0600, directories 0700.
  process.umask(0o077);

  // The environment is read once, here (config.ts).
  const config = loadConfig(process.env, process.stdout.isTTY === true);
  // JSON lines for log shippers; readable lines when a terminal is attached
  // (FAREBOX_LOG_PRETTY=true|false decides instead; `npm start` passes its own terminal's answer).
  const level = config.log.level;
  const prettyLogs = config.log.pretty;
  // JSON lines are gathered into writes of up to 64 KiB off the main thread (a line waits at most
  // 100 ms): a write per line was a tenth of the gateway's CPU under load, and each write wakes the
  // process reading the logs (docs/performance.md).
  const logger = level
    ? createLogger({
        level,
        // One short line per event (`12:00:01.234 INFO  GET /v1/agents 200 1.2 ms ...`), written at once.
        ...(prettyLogs ? { destination: prettyLines({ colors: config.log.colors }) } : { bufferBytes: 65536 }),
      })
    : undefined; // an invalid level is reported with every other configuration problem

  let gw: RunningGateway;
  try {
    gw = await startGateway({ ...config.options, ...extra, ...(logger ? { logger } : {}) });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    // Every problem at once, one per line (docs/production.md says what each setting is for).
    console.error(`farebox-gateway: refusing to start, the configuration is unsafe or invalid:\n${err.problems.map((p) => `  - ${p}`).join('\n')}`);
    if (logger) await flushLogger(logger);
    process.exit(1);
  }
  const key = gw.core.platform.key();
  console.log(`Farebox gateway   ${gw.url}`);
  console.log(`  health          ${gw.url}/health`);
  console.log(`  platform key    ${key.publicKey} (${key.network})`);
  if (gw.devnet) console.log(`  devnet          ${gw.devnet.url} (explorer ${gw.devnet.url}/explorer/local)`);
  console.log(`  database        ${gw.core.db.kind}`);

  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) process.exit(1);
      stopping = true;
      // The last block of log lines is written before the process ends (flushLogger).
      const exit = (code: number) => (logger ? flushLogger(logger) : Promise.resolve()).then(() => process.exit(code));
      gw.close().then(
        () => exit(0),
        () => exit(1),
      );
    });
  }
  return gw;
}
