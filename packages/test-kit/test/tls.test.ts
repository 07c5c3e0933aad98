import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpsProxy, testTls, type HttpsProxy } from '@farebox/test-kit';

let target: Server;
let proxy: HttpsProxy;

beforeAll(async () => {
  target = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => {
      res.writeHead(req.url?.includes('missing') ? 404 : 200, { 'content-type': 'application/json', 'x-upstream': 'yes' });
      res.end(JSON.stringify({ method: req.method, url: req.url, body, marker: req.headers['x-marker'] ?? null }));
    });
  });
  await new Promise<void>((r) => target.listen(0, '127.0.0.1', () => r()));
  proxy = await httpsProxy(`http://127.0.0.1:${(target.address() as { port: number }).port}/base`);
});
afterAll(async () => {
  await proxy?.close();
  await new Promise((r) => target?.close(r));
});

describe('the test run certificate', () => {
  it('is the one every worker trusts (NODE_EXTRA_CA_CERTS), for 127.0.0.1', () => {
    const tls = testTls();
    expect(tls.cert).toContain('-----BEGIN CERTIFICATE-----');
    expect(tls.key).toContain('PRIVATE KEY-----');
    expect(readFileSync(process.env.NODE_EXTRA_CA_CERTS ?? '', 'utf8')).toContain(tls.cert.trim());
  });

  it('httpsProxy forwards method, path under the target, body and headers, and answers what the target answers', async () => {
    expect(proxy.url).toBe(`https://127.0.0.1:${proxy.port}`);
    const res = await fetch(`${proxy.url}/soroban/rpc?x=1`, { method: 'POST', body: 'hello', headers: { 'x-marker': 'm1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-upstream')).toBe('yes');
    expect(await res.json()).toEqual({ method: 'POST', url: '/base/soroban/rpc?x=1', body: 'hello', marker: 'm1' });
    expect((await fetch(`${proxy.url}/missing`)).status).toBe(404);
  });

  it('a process a test starts trusts it too', async () => {
    const script = `fetch('${proxy.url}/child').then((r) => r.json()).then((j) => console.log(j.url))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(stdout.trim()).toBe('/base/child');
  });

  it('refuses a target that is not http', async () => {
    await expect(httpsProxy('https://127.0.0.1:1')).rejects.toThrow('httpsProxy forwards to an http:// URL, got https://127.0.0.1:1');
  });
});
