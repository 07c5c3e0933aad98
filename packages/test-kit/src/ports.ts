import { createServer } from 'node:net';

/** A loopback port nothing listens on (bound once by the OS, then closed): for a refused connection, or a server to start on. */
export async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}
