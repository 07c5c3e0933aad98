import { createServer, type Server } from 'node:http';
import type { GatewayCore } from '@farebox/gateway-core';

/** `FAREBOX_METRICS_ADDR`: /metrics alone on its own address (no token: keep it on a private interface). */
export async function startMetricsServer(core: GatewayCore): Promise<Server | undefined> {
  const address = core.config.metricsAddress;
  if (!address) return undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found","code":"NOT_FOUND"}');
      return;
    }
    core.metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': core.metrics.registry.contentType }).end(text),
      (err: unknown) => {
        core.logger.error({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"internal error","code":"INTERNAL"}');
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  return server;
}
