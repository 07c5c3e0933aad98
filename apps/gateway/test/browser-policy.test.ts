import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { pkce, rawClient } from './oauth-browser.js';

const CHROMIUM = '/usr/bin/chromium';
/** A second name the gateway answers for (FAREBOX_ALLOWED_HOSTS). */
const ALIAS = 'farebox-alias.test';

let h: Harness;
beforeAll(async () => {
  h = await startHarness('pglite', { allowedHosts: [ALIAS] });
}, 60_000);
afterAll(() => h?.close());

/** A raw request: fetch may not set Host, a DNS-rebinding page's browser does. */
function raw(
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
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
const JSON_BODY = { 'content-type': 'application/json' };
const PASSWORD = 'correct horse battery';
let fresh = 0;
const freshEmail = () => `fresh${Date.now()}_${fresh++}@example.com`;

/** Whether e-mail and password sign in on the gateway's own host (401 when no such account). */
async function canSignIn(email: string): Promise<boolean> {
  const r = await raw('/auth/login', { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ email, password: PASSWORD }) });
  if (r.status !== 200 && r.status !== 401) throw new Error(`sign-in answered ${r.status} ${r.body}`);
  return r.status === 200;
}

/** The session still works (sign-out was refused). */
const sessionAlive = async (u: TestUser) => (await raw('/v1/me', { headers: { cookie: u.cookie } })).status === 200;

/** A real authorization request: the consent form's fields, as the consent page carries them. */
async function consentForm(u: TestUser): Promise<{ fields: Record<string, string>; clientId: string; authorize: URL }> {
  const client = await rawClient(h.url);
  const p = pkce();
  const authorize = client.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' });
  const page = await raw(`${authorize.pathname}${authorize.search}`, { headers: { cookie: u.cookie } });
  if (page.status !== 200) throw new Error(`consent page answered ${page.status}`);
  const fields: Record<string, string> = {};
  for (const m of page.body.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[m[1]!] = m[2]!.replace(/&amp;/g, '&');
  return { fields: { ...fields, decision: 'allow', daily_limit_usd: '' }, clientId: client.client.client_id, authorize };
}

const connectedClients = async (u: TestUser) => ((await u.api('/v1/oauth/connections')).body as Array<{ client_id: string }>).map((c) => c.client_id);

describe('cookie routes', () => {
  it('refuse Origin: null (a sandboxed frame) on sign-up, sign-in, sign-out, session writes and the OAuth consent', async () => {
    const u = await h.user();
    const framed = { ...FORM, origin: 'null' };

    const login = await raw('/auth/login', { method: 'POST', headers: framed, body: form({ email: u.email, password: PASSWORD, next: '/' }) });
    expect(login.status).toBe(403);
    expect(JSON.parse(login.body)).toEqual({ error: 'cross-origin request refused', code: 'CSRF' });
    expect(login.headers['set-cookie']).toBeUndefined();
    expect(login.headers.location).toBeUndefined();

    const email = freshEmail();
    const signup = await raw('/auth/signup', { method: 'POST', headers: framed, body: form({ email, password: PASSWORD, next: '/' }) });
    expect(signup.status).toBe(403);
    expect(JSON.parse(signup.body)).toEqual({ error: 'cross-origin request refused', code: 'CSRF' });
    expect(signup.headers['set-cookie']).toBeUndefined();
    expect(await canSignIn(email), 'no account was made').toBe(false);

    const logout = await raw('/auth/logout', { method: 'POST', headers: { origin: 'null', cookie: u.cookie } });
    expect(logout.status).toBe(403);
    expect(await sessionAlive(u), 'the session was not ended').toBe(true);

    const write = await raw('/v1/api-keys', {
      method: 'POST',
      headers: { ...JSON_BODY, origin: 'null', cookie: u.cookie, 'x-csrf-token': u.csrf },
      body: '{"name":"framed"}',
    });
    expect(write.status).toBe(403);
    expect(JSON.parse(write.body)).toEqual({ error: 'cross-origin request refused', code: 'CSRF' });
    expect((await u.api('/v1/api-keys')).body.map((k: { name: string }) => k.name)).not.toContain('framed');

    // The OAuth consent: a valid form, posted from an opaque origin, grants nothing.
    const { fields, clientId } = await consentForm(u);
    const consent = await raw('/authorize', { method: 'POST', headers: { ...framed, cookie: u.cookie }, body: form(fields) });
    expect(consent.status).toBe(403);
    expect(consent.body).toContain('cross-origin request refused');
    expect(consent.headers.location).toBeUndefined();
    expect(await connectedClients(u)).not.toContain(clientId);
    // The same form from the gateway's own origin is granted (the refusal was the Origin, nothing else).
    const own = await raw('/authorize', { method: 'POST', headers: { ...FORM, origin: h.url, cookie: u.cookie }, body: form(fields) });
    expect(own.status).toBe(303);
    expect(new URL(own.headers.location as string).searchParams.get('code')).toBeTruthy();
  });

  it('refuse a session write and the OAuth consent without the session’s CSRF token, from the gateway’s own origin too', async () => {
    const u = await h.user();
    const own = { origin: h.url, cookie: u.cookie };

    for (const token of [undefined, 'not-the-token']) {
      const write = await raw('/v1/api-keys', {
        method: 'POST',
        headers: { ...JSON_BODY, ...own, ...(token ? { 'x-csrf-token': token } : {}) },
        body: '{"name":"forged"}',
      });
      expect(write.status).toBe(403);
      expect(JSON.parse(write.body)).toEqual({ error: 'missing or invalid CSRF token', code: 'CSRF' });
      const logout = await raw('/auth/logout', { method: 'POST', headers: { ...own, ...(token ? { 'x-csrf-token': token } : {}) } });
      expect(logout.status).toBe(403);
      expect(JSON.parse(logout.body)).toEqual({ error: 'missing or invalid CSRF token', code: 'CSRF' });
    }
    expect((await u.api('/v1/api-keys')).body.map((k: { name: string }) => k.name)).not.toContain('forged');
    expect(await sessionAlive(u), 'the session was not ended').toBe(true);

    const { fields, clientId } = await consentForm(u);
    const { _csrf: csrf, ...withoutToken } = fields;
    expect(csrf).toBe(u.csrf);
    for (const body of [withoutToken, { ...withoutToken, _csrf: 'not-the-token' }]) {
      const consent = await raw('/authorize', { method: 'POST', headers: { ...FORM, ...own }, body: form(body) });
      expect(consent.status).toBe(403);
      expect(consent.body).toContain('missing or invalid CSRF token');
      expect(consent.headers.location).toBeUndefined();
    }
    expect(await connectedClients(u)).not.toContain(clientId);
    // The same rule on both paths: the token in X-CSRF-Token is as good as the form field.
    const granted = await raw('/authorize', { method: 'POST', headers: { ...FORM, ...own, 'x-csrf-token': u.csrf }, body: form(withoutToken) });
    expect(granted.status).toBe(303);
    expect(new URL(granted.headers.location as string).searchParams.get('code')).toBeTruthy();
    expect(await connectedClients(u)).toContain(clientId);
  });

  it('read one bearer rule on /v1 and /mcp: an Authorization header that is not a single Bearer token is an invalid credential, never a fallback to the cookie', async () => {
    const u = await h.user();
    for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b', u.key.slice(0, 10)]) {
      const me = await raw('/v1/me', { headers: { authorization, cookie: u.cookie } });
      expect(me.status).toBe(401);
      expect(JSON.parse(me.body)).toEqual({ error: 'invalid credential', code: 'UNAUTHENTICATED' });
      const mcp = await raw('/mcp', {
        method: 'POST',
        headers: { ...JSON_BODY, authorization, accept: 'application/json, text/event-stream' },
        body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
      });
      expect(mcp.status).toBe(401);
      expect(JSON.parse(mcp.body).error.message).toBe('invalid or expired access token');
    }
    expect((await raw('/v1/me', { headers: { authorization: `Bearer ${u.key}` } })).status).toBe(200);
  });

  it('refuse a Host that is not the gateway’s, even with a matching Origin (DNS rebinding), on cookie and OAuth routes', async () => {
    const u = await h.user();
    const port = new URL(h.url).port;
    const evil = { host: `rebound.example:${port}`, origin: `http://rebound.example:${port}` };
    const unknownHost = new RegExp(`^unknown host "rebound\\.example:${port}": this gateway answers for 127\\.0\\.0\\.1:${port} `);

    const login = await raw('/auth/login', {
      method: 'POST',
      headers: { ...evil, ...JSON_BODY },
      body: JSON.stringify({ email: u.email, password: PASSWORD }),
    });
    expect(login.status).toBe(403);
    expect(JSON.parse(login.body).error).toMatch(unknownHost);
    expect(login.headers['set-cookie']).toBeUndefined();

    const email = freshEmail();
    const signup = await raw('/auth/signup', { method: 'POST', headers: { ...evil, ...FORM }, body: form({ email, password: PASSWORD, next: '/' }) });
    expect(signup.status).toBe(403);
    expect(JSON.parse(signup.body).error).toMatch(unknownHost);
    expect(signup.headers['set-cookie']).toBeUndefined();
    expect(await canSignIn(email), 'no account was made').toBe(false);

    expect((await raw('/auth/logout', { method: 'POST', headers: { ...evil, cookie: u.cookie } })).status).toBe(403);
    expect(await sessionAlive(u), 'the session was not ended').toBe(true);

    const read = await raw('/v1/me', { headers: { host: evil.host, cookie: u.cookie } });
    expect(read.status).toBe(403);
    expect(read.body).not.toContain(u.email);
    const write = await raw('/v1/api-keys', {
      method: 'POST',
      headers: { ...evil, ...JSON_BODY, cookie: u.cookie, 'x-csrf-token': u.csrf },
      body: '{"name":"rebound"}',
    });
    expect(write.status).toBe(403);
    expect((await u.api('/v1/api-keys')).body.map((k: { name: string }) => k.name)).not.toContain('rebound');

    // The OAuth authorization server: no consent page, no grant, no metadata, no tokens under a foreign name.
    const { fields, clientId, authorize } = await consentForm(u);
    const page = await raw(`${authorize.pathname}${authorize.search}`, { headers: { host: evil.host, cookie: u.cookie } });
    expect(page.status).toBe(403);
    expect(page.body).toContain('unknown host');
    expect(page.body).not.toContain(u.email);
    const consent = await raw('/authorize', { method: 'POST', headers: { ...evil, ...FORM, cookie: u.cookie }, body: form(fields) });
    expect(consent.status).toBe(403);
    expect(consent.headers.location).toBeUndefined();
    expect(await connectedClients(u)).not.toContain(clientId);
    for (const [method, path] of [
      ['GET', '/.well-known/oauth-authorization-server'],
      ['GET', '/.well-known/oauth-protected-resource/mcp'],
      ['POST', '/token'],
      ['POST', '/register'],
      ['POST', '/revoke'],
    ] as const) {
      const r = await raw(path, { method, headers: { host: evil.host } });
      expect(r.status, path).toBe(403);
      expect(JSON.parse(r.body).error_description, path).toMatch(unknownHost);
    }

    // An API key is no ambient credential: any Host.
    expect((await raw('/v1/me', { headers: { host: evil.host, authorization: `Bearer ${u.key}` } })).status).toBe(200);
    // The gateway's own host works, and so does a name of FAREBOX_ALLOWED_HOSTS with its origin under the public scheme.
    expect((await raw('/v1/me', { headers: { cookie: u.cookie } })).status).toBe(200);
    const alias = await raw('/auth/login', {
      method: 'POST',
      headers: { host: ALIAS, origin: `http://${ALIAS}`, ...JSON_BODY },
      body: JSON.stringify({ email: u.email, password: PASSWORD }),
    });
    expect(alias.status).toBe(200);
    expect(alias.headers['set-cookie']).toBeDefined();
    // `name:80` is `name` to an http origin.
    expect((await raw('/v1/me', { headers: { host: `${ALIAS.toUpperCase()}:80`, cookie: u.cookie } })).status).toBe(200);
    const otherScheme = await raw('/auth/login', {
      method: 'POST',
      headers: { host: ALIAS, origin: `https://${ALIAS}`, ...JSON_BODY },
      body: JSON.stringify({ email: u.email, password: PASSWORD }),
    });
    expect(otherScheme.status).toBe(403);
    expect(JSON.parse(otherScheme.body)).toEqual({ error: 'cross-origin request refused', code: 'CSRF' });
  });

  it('follow `next` only to a same-origin path, parsed as the browser will read it', async () => {
    const u = await h.user();
    const cases: Array<[string, string]> = [
      ['/.//evil.example', '/'],
      ['/x/../\\evil', '/'],
      ['/..//evil.example', '/'],
      ['/x/..//evil.example', '/'],
      ['//evil.example/', '/'],
      ['/\\evil.example', '/'],
      ['/\\/evil.example', '/'],
      ['\\\\evil.example', '/'],
      ['/\t/evil.example', '/'],
      ['/\n/evil.example', '/'],
      ['/\r\n/evil.example', '/'],
      ['\t//evil.example', '/'],
      [' //evil.example', '/'],
      ['https://evil.example/', '/'],
      ['https:evil.example', '/'],
      ['https:/evil.example', '/'],
      ['http:\\\\evil.example', '/'],
      ['javascript:alert(1)', '/'],
      ['JaVaScRiPt:alert(1)', '/'],
      ['data:text/html,<script>alert(1)</script>', '/'],
      ['evil.example', '/'],
      ['', '/'],
      ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
      ['/%5C%5Cevil.example', '/%5C%5Cevil.example'],
      ['/transactions?page=2#top', '/transactions?page=2#top'],
      ['/a/../b', '/b'],
      ['/authorize?response_type=code&client_id=c1&state=a%20b', '/authorize?response_type=code&client_id=c1&state=a%20b'],
    ];
    const got: Record<string, unknown> = {};
    for (const [next] of cases) {
      const r = await raw('/auth/login', { method: 'POST', headers: FORM, body: form({ email: u.email, password: PASSWORD, next }) });
      got[next] = r.status === 303 ? r.headers.location : r.status;
    }
    expect(got).toEqual(Object.fromEntries(cases));
    // Sign-up follows the same rule.
    for (const [next, location] of [
      ['/.//evil.example', '/'],
      ['/x/../\\evil', '/'],
      ['/billing', '/billing'],
    ]) {
      const r = await raw('/auth/signup', { method: 'POST', headers: FORM, body: form({ email: freshEmail(), password: PASSWORD, next: next! }) });
      expect(r.status, next).toBe(303);
      expect(r.headers.location, next).toBe(location);
    }
  });
});

describe('login CSRF from a sandboxed iframe, in Chromium', () => {
  // The attacker's site: another origin (localhost, another port) than the gateway (127.0.0.1).
  let attacker: Server;
  let attackPage = '';
  beforeAll(async () => {
    attacker = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(req.url === '/evil' ? attackPage : '<h1>attacker landing page</h1>');
    });
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
  });
  afterAll(() => new Promise((r) => attacker?.close(r)));

  it('is refused: the victim is not signed in as the attacker and stays off the attacker’s page', async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium chromium-driver`);
    const mallory = await h.user();
    const attackerSite = `http://localhost:${(attacker.address() as AddressInfo).port}`;
    // A sandboxed frame (opaque origin: the browser sends `Origin: null`) posts the attacker's
    // credentials to the gateway at the top level, with a `next` that leads back to the attacker.
    const frame = `<form id="f" method="post" action="${h.url}/auth/login" target="_top">
      <input name="email" value="${mallory.email}"><input name="password" value="${PASSWORD}">
      <input name="next" value="/.//${new URL(attackerSite).host}/landed"></form><script>document.getElementById('f').submit()</script>`;
    attackPage = `<h1>cute cats</h1><iframe sandbox="allow-forms allow-scripts allow-top-navigation" srcdoc="${frame.replace(/&/g, '&amp;').replace(/"/g, '&quot;')}"></iframe>`;
    const profile = await mkdtemp(join(tmpdir(), 'farebox-chromium-'));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    try {
      const tab = await context.newPage();
      const answered = tab.waitForResponse((r) => r.url() === `${h.url}/auth/login`);
      await tab.goto(`${attackerSite}/evil`);
      const response = await answered;
      // The top-level navigation commits somewhere other than the attack page.
      await tab.waitForURL((u) => u.pathname !== '/evil', { timeout: 10_000 });
      await tab.waitForLoadState('load');
      const session = (await context.cookies(h.url)).find((c) => c.name === 'farebox_session');
      const me = session ? await raw('/v1/me', { headers: { cookie: `farebox_session=${session.value}` } }) : undefined;
      const outcome = {
        origin: response.request().headers()['origin'],
        status: response.status(),
        landedOn: tab.url(),
        shows: (await tab.textContent('body'))?.trim().slice(0, 200),
        signedInAs: me?.status === 200 ? JSON.parse(me.body).email : null,
      };
      // Before: 303 to //localhost:<port>/landed, the attacker's page, signed in as mallory.
      expect(outcome).toEqual({
        origin: 'null',
        status: 403,
        landedOn: `${h.url}/auth/login`,
        shows: '{"error":"cross-origin request refused","code":"CSRF"}',
        signedInAs: null,
      });
    } finally {
      await context.close();
    }
  }, 60_000);
});
