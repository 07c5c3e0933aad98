import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createDevnet, type DevnetCore } from '@farebox/devnet';
import { createGateway, type CreateGatewayOptions, type GatewayCore } from '@farebox/gateway-core';
import { requestIdFrom, type GatewayHandler } from '@farebox/gateway-http';
import { createHost } from './host.js';
import { configFromEnv, listenSettingsFromEnv, type Env } from './config.js';
import { startMetricsServer } from './metrics-server.js';

export interface StartGatewayOptions extends CreateGatewayOptions {
  /**
   * The host's environment (`loadConfig(process.env)` passes it): read once,
   * here, into the gateway's typed configuration (`configFromEnv`); an option
   * wins over its variable. None when omitted.
   */
  env?: Env;
  /** Listen address (default 127.0.0.1; `HOST`). */
  host?: string;
  /**
   * Embed the devnet under `/devnet` (default: on for the local network unless
   * `FAREBOX_DEVNET_URL` points at another one).
   */
  embedDevnet?: boolean;
  /** Devnet ledger close interval (default 1000 ms; 'instant' for tests). */
  devnetCloseIntervalMs?: number | 'instant';
  /** Keep the devnet in memory instead of `dataDir/devnet`. */
  devnetInMemory?: boolean;
  /** Serve the web dashboard at `/`: a built dashboard directory, or false (default: @farebox/dashboard's dist). */
  dashboard?: string | false;
}

/** The answer while the core is not up yet: 503, try again in a second. */
function starting(req: IncomingMessage, res: ServerResponse): void {
  res
    .writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', 'x-request-id': requestIdFrom(req.headers) })
    .end(JSON.stringify({ error: 'starting', code: 'UNAVAILABLE' }));
}

export interface RunningGateway {
  url: string;
  port: number;
  core: GatewayCore;
  /** The gateway's transport-neutral handler, which the server carries requests to (tests call it in process). */
  handler: GatewayHandler;
  devnet: DevnetCore | undefined;
  server: Server;
  close(): Promise<void>;
}

/**
 * Starts the gateway: listens first (so the embedded devnet answers the
 * gateway's own Stellar clients), then builds the core and the API.
 *
 * @example
 * const gw = await startGateway({ port: 8787, dataDir: '.farebox' });
 * console.log(gw.url);
 */
export async function startGateway(options: StartGatewayOptions = {}): Promise<RunningGateway> {
  // The host's environment comes in `options.env` (loadConfig in config.ts) and is read in config.ts only; nothing reads process.env here.
  const env = options.env ?? {};
  const settings = listenSettingsFromEnv(env, options);
  const host = settings.host;
  const requestedPort = settings.port;
  let handler: (req: IncomingMessage, res: ServerResponse) => void = starting;
  const server = createServer((req, res) => handler(req, res));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(requestedPort, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const baseUrl = (settings.baseUrl ?? `http://${host.includes(':') ? `[${host}]` : host}:${port}`).replace(/\/+$/, '');
  const embed = options.embedDevnet ?? (settings.network === 'local' && !settings.devnetUrl);
  const dataDir = settings.dataDir;

  let devnet: DevnetCore | undefined;
  if (embed) {
    devnet = createDevnet({
      url: `${baseUrl}/devnet`,
      closeIntervalMs: options.devnetCloseIntervalMs ?? 1000,
      passphrase: settings.devnetPassphrase,
      ...(options.devnetInMemory ? {} : { dataDir: join(dataDir, 'devnet') }),
    });
    const dn = devnet;
    handler = (req, res) => {
      if (req.url?.startsWith('/devnet')) {
        req.url = req.url.slice('/devnet'.length) || '/';
        return dn.handler(req, res);
      }
      starting(req, res);
    };
  }

  let core: GatewayCore;
  try {
    // The gateway's one configuration: the environment and the options, validated together (every problem at once).
    const config =
      options.config ??
      configFromEnv(env, {
        ...options,
        baseUrl,
        port,
        dataDir,
        ...(embed ? { devnetUrl: `${baseUrl}/devnet` } : {}),
        ...(options.wallets ? { keystoreKeyProvided: true } : {}),
      });
    core = await createGateway({ ...options, config });
  } catch (err) {
    await new Promise((r) => server.close(r));
    await devnet?.close();
    throw err;
  }
  const served = createHost(core, { devnet, dashboard: options.dashboard });
  handler = served.listener;
  await core.start();
  const metricsServer = await startMetricsServer(core);

  return {
    url: baseUrl,
    port,
    core,
    handler: served.handler,
    devnet,
    server,
    async close() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(r));
      if (metricsServer) await new Promise((r) => metricsServer.close(r));
      await core.close();
      await devnet?.close();
    },
  };
}
