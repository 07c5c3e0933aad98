import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** The test run's self-signed certificate for 127.0.0.1 and localhost: file paths and PEM text. */
export interface TestTls {
  certPath: string;
  keyPath: string;
  cert: string;
  key: string;
}

const CERT_FILE = 'farebox-test-cert.pem';
const KEY_FILE = 'farebox-test-key.pem';
/** What NODE_EXTRA_CA_CERTS points at: the certificate plus any CA file the run already trusted. */
export const TRUST_FILE = 'farebox-test-trust.pem';
let cached: TestTls | undefined;

function read(dir: string): TestTls {
  const certPath = join(dir, CERT_FILE);
  const keyPath = join(dir, KEY_FILE);
  return { certPath, keyPath, cert: readFileSync(certPath, 'utf8'), key: readFileSync(keyPath, 'utf8') };
}

/**
 * Makes a self-signed certificate (and key) for 127.0.0.1 and localhost in a
 * new temporary folder with the `openssl` command. vitest.shared.ts calls it
 * once per test run, in vitest's main process, and points NODE_EXTRA_CA_CERTS
 * at the certificate so that every worker (and every process a test starts)
 * trusts it.
 *
 * @example
 * const tls = createTestTls();
 * process.env.NODE_EXTRA_CA_CERTS = tls.certPath;
 */
export function createTestTls(): TestTls {
  const dir = mkdtempSync(join(tmpdir(), 'farebox-test-tls-'));
  try {
    runOpenssl(dir);
  } catch (e) {
    throw new Error(`making the test certificate needs the openssl command: ${e instanceof Error ? e.message : String(e)}`);
  }
  return read(dir);
}

function runOpenssl(dir: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '7',
      '-subj',
      '/CN=farebox test',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      join(dir, KEY_FILE),
      '-out',
      join(dir, CERT_FILE),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}

/**
 * The test run's certificate, the one this process trusts: found through
 * NODE_EXTRA_CA_CERTS (set by vitest.shared.ts before the workers start), or
 * made on first use when the run did not set it (then only the processes a
 * test starts with NODE_EXTRA_CA_CERTS=certPath trust it).
 *
 * @example
 * const devnet = await startDevnet({ port: 0, tls: testTls() }); // https://127.0.0.1:<port>
 */
export function testTls(): TestTls {
  if (cached) return cached;
  const trusted = process.env.NODE_EXTRA_CA_CERTS;
  if (trusted?.endsWith(TRUST_FILE) && existsSync(join(dirname(trusted), KEY_FILE))) cached = read(dirname(trusted));
  else cached = createTestTls();
  return cached;
}

/**
 * Makes the run's certificate once and returns the NODE_EXTRA_CA_CERTS value
 * that trusts it (keeping the CA file `current` names, if any). Called by
 * vitest.shared.ts in vitest's main process, before workers fork; a second
 * call (another project's config, a nested run) finds `current` is already
 * ours and keeps it.
 *
 * @example
 * process.env.NODE_EXTRA_CA_CERTS = trustTestTls(process.env.NODE_EXTRA_CA_CERTS);
 */
export function trustTestTls(current: string | undefined): string {
  if (current?.endsWith(TRUST_FILE) && existsSync(current) && existsSync(join(dirname(current), KEY_FILE))) return current;
  const tls = createTestTls();
  const trustPath = join(dirname(tls.certPath), TRUST_FILE);
  const previous = current && existsSync(current) ? `${readFileSync(current, 'utf8').trim()}\n` : '';
  writeFileSync(trustPath, `${previous}${tls.cert}`);
  return trustPath;
}

/** An https server with the test certificate in front of an http one. */
export interface HttpsProxy {
  /** `https://127.0.0.1:<port>`: the target's paths answer under it. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Serves https on 127.0.0.1 (a free port) with the test run's certificate and
 * forwards every request (method, path, headers, body) to `targetHttpUrl`,
 * streaming the answer back: puts TLS in front of an embedded devnet (a
 * gateway's `/devnet`) for stock Stellar clients, which refuse plain http.
 *
 * @example
 * const proxy = await httpsProxy(gateway.url);
 * const rpcUrl = `${proxy.url}/devnet/soroban/rpc`;
 */
export async function httpsProxy(targetHttpUrl: string): Promise<HttpsProxy> {
  const target = new URL(targetHttpUrl);
  if (target.protocol !== 'http:') throw new Error(`httpsProxy forwards to an http:// URL, got ${targetHttpUrl}`);
  const prefix = target.pathname.replace(/\/+$/, '');
  const tls = testTls();
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const upstream = httpRequest(
      {
        hostname: target.hostname,
        port: target.port || 80,
        method: req.method,
        path: `${prefix}${req.url ?? '/'}`,
        headers: { ...req.headers, host: target.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (e) => {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'text/plain' }).end(`httpsProxy: ${e.message}`);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
