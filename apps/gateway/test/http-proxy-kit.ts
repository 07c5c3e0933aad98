import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An HTTP pass-through in front of a real server (the gateway, the devnet's
 * friendbot or Horizon) whose hook sees every request first: it may hold it
 * (a friendbot that is "slow" until the test lets it go, a network that takes
 * its time to confirm) or answer `'drop'`: the request still reaches the
 * server, but the connection to the client is cut before any answer (an
 * answer lost on the way back), or `'drop-answer'`: the same, once the server
 * has answered in full (the outcome exists; the client never learns it).
 */
export interface HttpProxy {
  /** The proxy's origin (`http://127.0.0.1:<port>`): the target's paths work under it. */
  readonly url: string;
  close(): Promise<void>;
}

export type ProxyHook = (req: IncomingMessage, body: Buffer) => Promise<'drop' | 'drop-answer' | void> | 'drop' | 'drop-answer' | void;

const HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'content-encoding']);

export async function startHttpProxy(target: string, hook: ProxyHook = () => undefined): Promise<HttpProxy> {
  const origin = new URL(target).origin;
  const forward = async (req: IncomingMessage, body: Buffer) => {
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && typeof v === 'string') headers[k] = v;
    return fetch(`${origin}${req.url ?? '/'}`, {
      method: req.method ?? 'GET',
      headers,
      ...(body.length > 0 ? { body: new Uint8Array(body) } : {}),
      redirect: 'manual',
    });
  };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const body = Buffer.concat(chunks);
      const verdict = await hook(req, body);
      if (verdict === 'drop') {
        // The server gets the request; the client never gets the answer.
        forward(req, body).catch(() => undefined);
        req.socket.destroy();
        return;
      }
      if (verdict === 'drop-answer') {
        // The server answers in full; the connection to the client is cut instead of passing it on.
        await (await forward(req, body)).arrayBuffer();
        req.socket.destroy();
        return;
      }
      const upstream = await forward(req, body);
      const headers: Record<string, string> = {};
      upstream.headers.forEach((v, k) => {
        if (!HOP.has(k)) headers[k] = v;
      });
      const text = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, headers);
      res.end(text);
    })().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A gate a hook can wait on: `shut()` makes {@link Gate.pass} wait until `open()`. */
export interface Gate {
  pass(): Promise<void>;
  shut(): void;
  open(): void;
  /** Requests that waited at the gate so far. */
  readonly held: number;
}

export function createGate(): Gate {
  let wait: Promise<void> | undefined;
  let release: (() => void) | undefined;
  let held = 0;
  return {
    async pass() {
      if (!wait) return;
      held++;
      await wait;
    },
    shut() {
      if (!wait) wait = new Promise((r) => (release = r));
    },
    open() {
      wait = undefined;
      release?.();
    },
    get held() {
      return held;
    },
  };
}
