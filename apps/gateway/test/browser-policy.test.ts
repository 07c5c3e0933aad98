import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from './harness.js';

const CHROMIUM = '/usr/bin/chromium';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('pglite');
}, 60_000);
afterAll(() => h?.close());

/** A raw request: fetch may not set Host, a DNS-rebinding page's browser does. */
function raw(path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const u = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path, method: init.method ?? 'GET', headers: init.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('cookie routes', () => {
  it('refuse Origin: null (a sandboxed frame) on sign-up, sign-in, sign-out and session writes, and set no cookie', async () => {
    const u = await h.user();
    for (const path of ['/auth/login', '/auth/signup']) {
      const r = await raw(path, { method: 'POST', headers: { ...FORM, origin: 'null' }, body: form({ email: u.email, password: 'correct horse battery', next: '/' }) });
      expect(r.status, path).toBe(403);
      expect(JSON.parse(r.body)).toEqual({ error: 'cross-origin request refused' });
      expect(r.headers['set-cookie'], path).toBeUndefined();
    }
    expect((await raw('/auth/logout', { method: 'POST', headers: { origin: 'null', cookie: u.cookie } })).status).toBe(403);
    const write = await raw('/v1/api-keys', { method: 'POST', headers: { origin: 'null', cookie: u.cookie, 'x-csrf-token': u.csrf, 'content-type': 'application/json' }, body: '{"name":"framed"}' });
    expect(write.status).toBe(403);
    expect((await u.api('/v1/api-keys')).body.map((k: { name: string }) => k.name)).not.toContain('framed');
    // The OAuth consent form too.
    const consent = await raw('/authorize', { method: 'POST', headers: { ...FORM, origin: 'null', cookie: u.cookie }, body: form({ _csrf: u.csrf, decision: 'allow' }) });
    expect(consent.status).toBe(403);
    expect(consent.body).toContain('cross-origin request refused');
  });

  it('refuse a Host that is not the gateway’s, even with a matching Origin (DNS rebinding), on cookie and OAuth routes', async () => {
    const u = await h.user();
    const port = new URL(h.url).port;
    const evil = { host: `rebound.example:${port}`, origin: `http://rebound.example:${port}` };
    const login = await raw('/auth/login', { method: 'POST', headers: { ...evil, 'content-type': 'application/json' }, body: JSON.stringify({ email: u.email, password: 'correct horse battery' }) });
    expect(login.status).toBe(403);
    expect(JSON.parse(login.body).error).toMatch(/^unknown host "rebound.example:\d+"/);
    expect(login.headers['set-cookie']).toBeUndefined();
    expect((await raw('/v1/me', { headers: { host: evil.host, cookie: u.cookie } })).status).toBe(403);
    for (const path of ['/.well-known/oauth-authorization-server', '/authorize?client_id=x', '/token']) {
      expect((await raw(path, { method: path === '/token' ? 'POST' : 'GET', headers: { host: evil.host } })).status, path).toBe(403);
    }
    // An API key is no ambient credential: any Host.
    expect((await raw('/v1/me', { headers: { host: evil.host, authorization: `Bearer ${u.key}` } })).status).toBe(200);
    // The gateway's own host works.
    expect((await raw('/v1/me', { headers: { cookie: u.cookie } })).status).toBe(200);
  });

  it('follow `next` only to a same-origin path, parsed as the browser will read it', async () => {
    const u = await h.user();
    const cases: Array<[string, string]> = [
      ['/.//evil.example', '/'],
      ['/x/../\\evil', '/'],
      ['//evil.example/', '/'],
      ['/\\evil.example', '/'],
      ['/\t/evil.example', '/'],
      ['/\n/evil.example', '/'],
      ['https://evil.example/', '/'],
      ['https:evil.example', '/'],
      ['javascript:alert(1)', '/'],
      ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
      ['/transactions?page=2#top', '/transactions?page=2#top'],
      ['/a/../b', '/b'],
    ];
    for (const [next, location] of cases) {
      const r = await raw('/auth/login', { method: 'POST', headers: FORM, body: form({ email: u.email, password: 'correct horse battery', next }) });
      expect(r.status, JSON.stringify(next)).toBe(303);
      expect(r.headers.location, JSON.stringify(next)).toBe(location);
    }
  });
});

describe('login CSRF from a sandboxed iframe, in Chromium', () => {
  let attacker: Server;
  beforeAll(async () => {
    attacker = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>attacker</h1>'));
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
  });
  afterAll(() => new Promise((r) => attacker?.close(r)));

  it('is refused: the victim is not signed in as the attacker and stays off the attacker’s page', async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium chromium-driver`);
    const mallory = await h.user();
    const attackerPort = (attacker.address() as AddressInfo).port;
    const landing = `http://localhost:${attackerPort}/landed`;
    // Attacker page (another origin): a sandboxed frame posts the attacker's credentials to the gateway at the top level.
    const frame = `<form id="f" method="post" action="${h.url}/auth/login" target="_top">
      <input name="email" value="${mallory.email}"><input name="password" value="correct horse battery">
      <input name="next" value="/.//localhost:${attackerPort}/landed"></form><script>document.getElementById('f').submit()</script>`;
    const page = `<iframe sandbox="allow-forms allow-scripts allow-top-navigation" srcdoc="${frame.replace(/"/g, '&quot;')}"></iframe>`;
    const profile = await mkdtemp(join(tmpdir(), 'farebox-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    try {
      const tab = await context.newPage();
      await tab.route(`http://localhost:${attackerPort}/evil`, (route) => route.fulfill({ contentType: 'text/html', body: page }));
      const answered = tab.waitForResponse((r) => r.url() === `${h.url}/auth/login`);
      await tab.goto(`http://localhost:${attackerPort}/evil`);
      const response = await answered;
      expect(response.request().headers()['origin']).toBe('null');
      expect(response.status()).toBe(403);
      // The top-level navigation commits: on the gateway's refusal, not on the attacker's landing page.
      await tab.waitForURL((u) => !u.pathname.endsWith('/evil'), { timeout: 10_000 });
      expect(tab.url()).not.toBe(landing);
      expect(tab.url(), tab.url()).toContain(new URL(h.url).host);
      expect((await context.cookies(h.url)).map((c) => c.name)).not.toContain('farebox_session');
    } finally {
      await context.close();
    }
  }, 60_000);
});
