import { once } from 'node:events';
import net from 'node:net';
import { expect, it } from 'vitest';
import { openDatabase } from '../src/index.js';

// A PostgreSQL server that stops answering without refusing (a black-holed
// host, a hung server): the connection attempt fails after the connect
// timeout with pg's "connection timeout" error, which the gateway answers as
// 503 database unavailable, instead of leaving the caller waiting.
it('a server that accepts and never answers fails the connection after connectTimeoutMs', async () => {
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => void sockets.push(socket)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  try {
    await expect(openDatabase({ url: `postgres://farebox@127.0.0.1:${port}/farebox`, connectTimeoutMs: 200 })).rejects.toThrow(
      'Connection terminated due to connection timeout',
    );
    expect(sockets.length).toBeGreaterThan(0);
  } finally {
    for (const s of sockets) s.destroy();
    server.close();
  }
});
