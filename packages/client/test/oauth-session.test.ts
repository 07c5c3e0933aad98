import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createOAuthSession, OAuthClientError, oauthFetch } from '../src/oauth/index.js';

// `@farebox/client/oauth` (the sign-in of the MCP adapter and the CLI) against
// a loopback authorization server and MCP resource in one process: the
// authorization server redirects straight back (no login page), and the
// "browser" is fetch, opening the address the session prints, following the
// redirect to the session's loopback callback.

interface AsOptions {
  /** Advertise `authorization_response_iss_parameter_supported` (default true). */
  issAdvertised?: boolean;
  /** What the authorization response carries as `iss`: the issuer (default), none, or this string. */
  iss?: (issuer: string) => string | null;
  /** The `issuer` the metadata document names (default: the issuer it is served for). */
  metadataIssuer?: (issuer: string) => string;
  /** The scopes each MCP request needs (default none): `write` for a body saying so, `read` otherwise. */
  scopes?: { read?: string; write?: string; supported?: string[] };
  /** Never grant the `write` scope's access (a 403 every time). */
  alwaysInsufficient?: boolean;
}

interface Loopback {
  issuer: string;
  mcpUrl: string;
  /** Every request's method and path, in order. */
  seen: string[];
  registrations: Array<Record<string, unknown>>;
  authorizations: URLSearchParams[];
  tokenRequests: URLSearchParams[];
  close(): Promise<void>;
}

const body = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let s = '';
    req.on('data', (c: Buffer) => {
      s += c.toString();
    });
    req.on('end', () => resolve(s));
  });

async function loopbackServer(opts: AsOptions = {}): Promise<Loopback> {
  const seen: string[] = [];
  const registrations: Array<Record<string, unknown>> = [];
  const authorizations: URLSearchParams[] = [];
  const tokenRequests: URLSearchParams[] = [];
  const codes = new Map<string, { scope: string; challenge: string }>();
  const tokens = new Map<string, string>();
  let n = 0;
  let base = '';
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', base);
    seen.push(`${req.method} ${url.pathname}`);
    const json = (status: number, value: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
    const issuer = base;
    if (url.pathname === '/.well-known/oauth-protected-resource/mcp') {
      return json(200, {
        resource: `${base}/mcp`,
        authorization_servers: [issuer],
        ...(opts.scopes?.supported ? { scopes_supported: opts.scopes.supported } : {}),
      });
    }
    if (url.pathname === '/.well-known/oauth-authorization-server') {
      return json(200, {
        issuer: opts.metadataIssuer ? opts.metadataIssuer(issuer) : issuer,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
        response_types_supported: ['code'],
        grant_types_supported: ['authorization_code', 'refresh_token'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['none'],
        ...(opts.issAdvertised === false ? {} : { authorization_response_iss_parameter_supported: true }),
      });
    }
    if (url.pathname === '/register' && req.method === 'POST') {
      const metadata = JSON.parse(await body(req)) as Record<string, unknown>;
      registrations.push(metadata);
      return json(201, { ...metadata, client_id: `client-${registrations.length}`, client_id_issued_at: 0 });
    }
    if (url.pathname === '/authorize') {
      authorizations.push(url.searchParams);
      const code = `code-${++n}`;
      codes.set(code, { scope: url.searchParams.get('scope') ?? '', challenge: url.searchParams.get('code_challenge') ?? '' });
      const back = new URL(url.searchParams.get('redirect_uri') ?? '');
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      const iss = opts.iss ? opts.iss(issuer) : issuer;
      if (iss !== null) back.searchParams.set('iss', iss);
      return res.writeHead(302, { location: back.href }).end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      const form = new URLSearchParams(await body(req));
      tokenRequests.push(form);
      const grant = codes.get(form.get('code') ?? '');
      const verifier = form.get('code_verifier') ?? '';
      if (!grant || createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) return json(400, { error: 'invalid_grant' });
      codes.delete(form.get('code') ?? '');
      const token = `token-${++n}`;
      tokens.set(token, grant.scope);
      return json(200, { access_token: token, token_type: 'Bearer', expires_in: 3600, refresh_token: `refresh-${n}`, scope: grant.scope });
    }
    if (url.pathname === '/mcp' && req.method === 'POST') {
      const wantsWrite = (await body(req)).includes('"write"');
      const needed = (wantsWrite ? opts.scopes?.write : opts.scopes?.read) ?? '';
      const metadataUrl = `${base}/.well-known/oauth-protected-resource/mcp`;
      const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const granted = token !== undefined ? tokens.get(token) : undefined;
      if (granted === undefined) {
        return json(
          401,
          { error: 'invalid_token' },
          { 'www-authenticate': `Bearer resource_metadata="${metadataUrl}"${opts.scopes?.read ? `, scope="${opts.scopes.read}"` : ''}` },
        );
      }
      const has = new Set(granted.split(' '));
      if ((wantsWrite && opts.alwaysInsufficient) || !needed.split(' ').every((s) => s === '' || has.has(s))) {
        return json(
          403,
          { error: 'insufficient_scope' },
          {
            'www-authenticate': `Bearer error="insufficient_scope", error_description="needs ${needed}", scope="${needed}", resource_metadata="${metadataUrl}"`,
          },
        );
      }
      return json(200, { ok: true, scope: granted });
    }
    json(404, { error: 'not_found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: base,
    mcpUrl: `${base}/mcp`,
    seen,
    registrations,
    authorizations,
    tokenRequests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A session on a fresh token file whose printed sign-in addresses a "browser" opens; `pages()` is what the browser ended on. */
async function signingIn(as: Loopback) {
  const dir = await mkdtemp(join(tmpdir(), 'farebox-oauth-session-'));
  closers.push(() => rm(dir, { recursive: true, force: true }));
  const browsing: Array<Promise<{ status: number; text: string }>> = [];
  const log: string[] = [];
  const tokenPath = join(dir, 'token.json');
  const session = createOAuthSession({
    mcpUrl: as.mcpUrl,
    tokenPath,
    clientName: 'oauth test',
    openBrowser: false,
    signInTimeoutMs: 10_000,
    log(line) {
      log.push(line);
      const address = /^\s+(http:\/\/\S+)$/.exec(line)?.[1];
      if (address) browsing.push(fetch(address).then(async (r) => ({ status: r.status, text: await r.text() })));
    },
  });
  return { session, pages: () => Promise.all(browsing), log, tokenFile: async () => JSON.parse(await readFile(tokenPath, 'utf8')) };
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; message: string }> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(OAuthClientError);
  return { code: (e as OAuthClientError).code, message: (e as OAuthClientError).message };
}

describe('@farebox/client/oauth checks who answered the sign-in', () => {
  it('refuses an authorization response without iss when the server advertises it (RFC 9207), before any token request', async () => {
    const as = await loopbackServer({ iss: () => null });
    closers.push(as.close);
    const { session, pages } = await signingIn(as);
    expect(await refusal(session.accessToken())).toEqual({
      code: 'SIGN_IN',
      message: `the authorization response has no iss although ${as.issuer} advertises it (RFC 9207): sign-in refused`,
    });
    expect(as.tokenRequests).toHaveLength(0);
    // The browser says so too.
    const [page, ...more] = await pages();
    expect(more).toEqual([]);
    expect(page!.status).toBe(400);
    expect(page!.text).toContain('<h1>Sign-in refused</h1>');
    expect(page!.text).toContain(
      `the authorization response has no iss although ${as.issuer} advertises it (RFC 9207): sign-in refused. Nothing was connected`,
    );
  });

  it('accepts a response without iss from a server that does not advertise it', async () => {
    const as = await loopbackServer({ issAdvertised: false, iss: () => null });
    closers.push(as.close);
    const { session } = await signingIn(as);
    expect(await session.accessToken()).toMatch(/^token-/);
    expect(as.tokenRequests).toHaveLength(1);
  });

  it('compares iss with the issuer exactly: one differing by a trailing slash is refused', async () => {
    const as = await loopbackServer({ iss: (issuer) => `${issuer}/` });
    closers.push(as.close);
    const { session, pages } = await signingIn(as);
    expect(await refusal(session.accessToken())).toEqual({
      code: 'SIGN_IN',
      message: `the authorization response names the issuer ${as.issuer}/, not ${as.issuer} (RFC 9207): sign-in refused`,
    });
    expect(as.tokenRequests).toHaveLength(0);
    expect((await pages()).map((p) => p.status)).toEqual([400]);
  });

  it('refuses authorization server metadata whose issuer is not the issuer it asked (RFC 8414 3.3), and uses none of its endpoints', async () => {
    // The same server under another name: the document would work, but it does not say it is the issuer asked.
    const as = await loopbackServer({ metadataIssuer: (issuer) => issuer.replace('127.0.0.1', 'localhost') });
    closers.push(as.close);
    const { session, log } = await signingIn(as);
    const other = as.issuer.replace('127.0.0.1', 'localhost');
    expect(await refusal(session.accessToken())).toEqual({
      code: 'GATEWAY',
      message: `the authorization server metadata of ${as.issuer} names another issuer, ${other} (RFC 8414 section 3.3 requires the issuer it was asked for): its endpoints are not used, sign-in refused`,
    });
    expect(as.seen).toEqual(['GET /.well-known/oauth-protected-resource/mcp', 'GET /.well-known/oauth-authorization-server']);
    expect(log).toEqual([]);
  });

  it('registers dynamically as a native application with a loopback redirect and no secret (RFC 7591)', async () => {
    const as = await loopbackServer();
    closers.push(as.close);
    const { session } = await signingIn(as);
    await session.accessToken();
    expect(as.registrations).toHaveLength(1);
    expect(as.registrations[0]).toMatchObject({
      application_type: 'native',
      client_name: 'oauth test',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    expect(as.registrations[0]!.redirect_uris).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback$/)]);
  });
});

describe('oauthFetch follows the resource server’s challenges', () => {
  const post = (f: ReturnType<typeof oauthFetch>, url: string, op: string) =>
    f(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ op }) });

  it('signs in for the 401 challenge’s scope, then on 403 insufficient_scope signs in again for the union and retries once', async () => {
    const as = await loopbackServer({ scopes: { read: 'read', write: 'write', supported: ['read', 'write', 'admin'] } });
    closers.push(as.close);
    const { session, log, tokenFile } = await signingIn(as);
    const f = oauthFetch(session);

    const read = await post(f, as.mcpUrl, 'read');
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({ ok: true, scope: 'read' });

    const write = await post(f, as.mcpUrl, 'write');
    expect(write.status).toBe(200);
    expect(await write.json()).toEqual({ ok: true, scope: 'read write' });
    // The first sign-in asked what the 401 named (not all of scopes_supported); the step-up kept it and added the challenged one.
    expect(as.authorizations.map((q) => q.get('scope'))).toEqual(['read', 'read write']);
    expect(log).toContain(
      `Farebox: ${as.issuer} asks for more access (read write) than oauth test was granted. Sign in again to allow it; open this address in a browser:`,
    );
    expect((await tokenFile()).tokens.scope).toBe('read write');

    // The wider token serves both from now on, without another sign-in.
    expect((await post(f, as.mcpUrl, 'read')).status).toBe(200);
    expect((await post(f, as.mcpUrl, 'write')).status).toBe(200);
    expect(as.authorizations).toHaveLength(2);
  });

  it('steps up once per request: a 403 that persists after the new sign-in is the answer', async () => {
    const as = await loopbackServer({ scopes: { read: 'read', write: 'write' }, alwaysInsufficient: true });
    closers.push(as.close);
    const { session } = await signingIn(as);
    const f = oauthFetch(session);
    expect((await post(f, as.mcpUrl, 'read')).status).toBe(200);
    const write = await post(f, as.mcpUrl, 'write');
    expect(write.status).toBe(403);
    expect(write.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(as.authorizations.map((q) => q.get('scope'))).toEqual(['read', 'read write']);
  });
});
