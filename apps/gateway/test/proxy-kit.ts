import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * A TCP pass-through in front of a real server (PostgreSQL, the devnet), so a
 * test can take a dependency away and bring it back on the same address
 * without stopping the server other tests share.
 */
export interface TcpProxy {
  readonly port: number;
  /** Refuses new connections and cuts the open ones. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

export async function startProxy(target: { host?: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((client) => {
        const upstream = connect(target.port, target.host ?? '127.0.0.1');
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on('close', () => sockets.delete(sock));
          sock.on('error', () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream).pipe(client);
      });
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  await listen();
  return {
    get port() {
      return port;
    },
    async stop() {
      const s = server;
      server = undefined;
      for (const sock of sockets) sock.destroy();
      if (s) await new Promise((r) => s.close(r));
    },
    start: listen,
  };
}
