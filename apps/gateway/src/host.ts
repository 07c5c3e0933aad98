import type { IncomingMessage, ServerResponse } from 'node:http';
import express from 'express';
import type { DevnetCore } from '@farebox/devnet';
import { legacySink, type GatewayCore } from '@farebox/gateway-core';
import { createGatewayHandler, recordRequest, requestIdFrom, toNodeListener, type GatewayHandler } from '@farebox/gateway-http';
import { serveDashboard } from './dashboard.js';

export interface HostOptions {
  /** The embedded devnet, served under `/devnet`. */
  devnet?: DevnetCore | undefined;
  /** The built dashboard served at `/` (a directory), false for none, or @farebox/dashboard's dist by default. */
  dashboard?: string | false | undefined;
}

export interface Host {
  /** The listener for `http.createServer`. */
  listener: (req: IncomingMessage, res: ServerResponse) => void;
  /** The gateway's transport-neutral handler (`@farebox/gateway-http`) the listener carries requests to. */
  handler: GatewayHandler;
}

/**
 * The gateway's host: node:http carries every request to the one handler of
 * `@farebox/gateway-http`, which holds all the policy; express serves only
 * what no route takes (the dashboard's static files) and the embedded devnet
 * sits under `/devnet` (its requests logged as the route `/devnet/*`).
 */
export function createHost(core: GatewayCore, options: HostOptions = {}): Host {
  const log = legacySink(core.logger, 'error');
  const handler = createGatewayHandler(core, { log });
  const site = express();
  site.disable('x-powered-by');
  if (options.dashboard !== false) serveDashboard(site, options.dashboard);
  site.use((_req, res) => {
    res.status(404).type('application/json').send('{"error":"not found","code":"NOT_FOUND"}');
  });
  const gateway = toNodeListener(handler, { fallback: site, log });
  const devnet = options.devnet;
  if (!devnet) return { listener: gateway, handler };
  return {
    handler,
    listener(req, res) {
      const url = req.url ?? '/';
      if (url !== '/devnet' && !url.startsWith('/devnet/') && !url.startsWith('/devnet?')) return gateway(req, res);
      const t0 = performance.now();
      const requestId = requestIdFrom(req.headers);
      res.setHeader('X-Request-Id', requestId);
      res.once('finish', () =>
        recordRequest(core, {
          requestId,
          method: req.method ?? 'GET',
          route: '/devnet/*',
          status: res.statusCode,
          ms: performance.now() - t0,
          ip: () => req.socket.remoteAddress,
          principal: undefined,
          refusedBy: undefined,
        }),
      );
      req.url = url.slice('/devnet'.length) || '/';
      devnet.handler(req, res);
    },
  };
}
