import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { MemoryProvider } from './mcp-kit.js';
import { consent } from './oauth-browser.js';

/** A self-signed certificate for 127.0.0.1, made for this run (the gateway trusts it through its CA option, nothing else does). */
function selfSigned(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'farebox-cimd-'));
  try {
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
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const REDIRECT = 'http://127.0.0.1:47123/callback';

describe('Client ID Metadata Documents: a client identified by an https URL, no registration', () => {
  let h: Harness;
  let alice: TestUser;
  let docs: Server;
  let base: string;
  let ca: string;
  const served: Record<string, { body: string; headers?: Record<string, string>; status?: number; delayMs?: number }> = {};
  const fetches: Record<string, number> = {};

  beforeAll(async () => {
    const tls = selfSigned();
    ca = tls.cert;
    docs = createServer(tls, (req, res) => {
      const path = req.url ?? '/';
      fetches[path] = (fetches[path] ?? 0) + 1;
      const doc = served[path];
      if (!doc) return void res.writeHead(404).end();
      const answer = () => void res.writeHead(doc.status ?? 200, { 'content-type': 'application/json', ...doc.headers }).end(doc.body);
      if (doc.delayMs) setTimeout(answer, doc.delayMs);
      else answer();
    });
    await new Promise<void>((resolve) => docs.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(docs.address() as AddressInfo).port}`;
    // The gateway trusts the test's certificate through its fetch's CA option (TLS checks stay on); loopback endpoints are allowed in tests.
    h = await startHarness('pglite', { oauth: { clientMetadataDocuments: { ca: tls.cert, timeoutMs: 2000 } } });
    alice = await h.user();
    await h.publish('echo', { price: '0.01' });
    const doc = (path: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = { 'cache-control': 'max-age=300' }) => {
      served[path] = { body: JSON.stringify({ client_id: `${base}${path}`, client_name: 'Doc Client', redirect_uris: [REDIRECT], ...extra }), headers };
    };
    doc('/oauth/client.json', { client_uri: 'https://doc-client.example', token_endpoint_auth_method: 'none' });
    // The official v2 SDK client's own CIMD support (a host's provider names its document URL).
    doc('/oauth/sdk-client.json', { client_name: 'SDK Doc Client', redirect_uris: [new MemoryProvider('x').redirectUrl] });
    doc('/oauth/other-id.json', { client_id: `${base}/oauth/client.json` });
    doc('/oauth/secret.json', { token_endpoint_auth_method: 'client_secret_basic' });
    doc('/oauth/big.json', { padding: 'x'.repeat(6000) });
    served['/oauth/moved.json'] = { status: 302, body: '', headers: { location: `${base}/oauth/client.json` } };
    served['/oauth/not-json.json'] = { body: '<html>' };
    // Answers after the gateway's time limit (2 s here).
    served['/oauth/slow.json'] = { ...served['/oauth/client.json']!, delayMs: 3000 };
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await new Promise<void>((resolve) => (docs ? docs.close(() => resolve()) : resolve()));
  });

  it('advertises CIMD with the none method, and a strict client (oauth4webapi) authorizes, consents, redeems, lists the tools and makes a paid call', async () => {
    const issuer = new URL(h.url);
    const insecure = { [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    expect(as.client_id_metadata_document_supported).toBe(true);
    expect(as.token_endpoint_auth_methods_supported).toContain('none');

    const client: oauth.Client = { client_id: `${base}/oauth/client.json` };
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'agents:read agents:call account:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource: `${h.url}/mcp`,
    }).toString();
    const { redirect, page } = await consent(h.url, url, alice);
    // The consent page names the app as its document does, and the host the document came from.
    expect(page.html).toContain('Connect <bdi>Doc Client</bdi> to Farebox?');
    expect(page.html).toContain(`identified by its metadata document at <strong><bdi>127.0.0.1:${new URL(base).port}</bdi></strong>`);
    // GET and POST of /authorize: fetched once, then served from the cache its max-age allows.
    expect(fetches['/oauth/client.json']).toBe(1);

    const params = oauth.validateAuthResponse(as, client, redirect, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, {
        additionalParameters: { resource: `${h.url}/mcp` },
        ...insecure,
      }),
    );
    expect(tokens.access_token).toMatch(/^fbo_at_/);
    expect(tokens.scope).toBe('agents:read agents:call account:read');

    const withToken: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${tokens.access_token}`);
      return fetch(input, { ...init, headers });
    };
    const mcp = new Client({ name: 'cimd', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { fetch: withToken }));
    expect((await mcp.listTools()).tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
    const before = (await alice.api('/v1/balance')).body.balance_base_units as number;
    const call = await mcp.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { via: 'cimd' } } });
    expect(call.isError).toBeFalsy();
    expect(call.structuredContent).toMatchObject({ service: 'echo', result: { echo: { via: 'cimd' } }, cost: { base_units: 100_000 }, paidWith: 'credit' });
    expect((await alice.api('/v1/balance')).body.balance_base_units).toBe(before - 100_000);
    await mcp.close();

    // The user's connections name the app by its document.
    const [conn] = (await alice.api('/v1/oauth/connections')).body;
    expect(conn).toMatchObject({ client_id: client.client_id, client_name: 'Doc Client' });
  });

  it('the official v2 SDK client with a clientMetadataUrl: no registration, its document URL is the client_id, consent, token, a paid call', async () => {
    const url = `${base}/oauth/sdk-client.json`;
    const provider = Object.assign(new MemoryProvider('SDK Doc Client'), { clientMetadataUrl: url });
    const mcpUrl = new URL(`${h.url}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    const pinned = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const;
    await expect(new Client({ name: 'sdk-cimd', version: '1.0.0' }, pinned).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.authorizationUrl!.searchParams.get('client_id')).toBe(url);
    const { redirect, page } = await consent(h.url, provider.authorizationUrl!, alice);
    expect(page.html).toContain('Connect <bdi>SDK Doc Client</bdi> to Farebox?');
    await first.finishAuth(redirect.searchParams);
    expect(provider.info?.client_id).toBe(url);
    const client = new Client({ name: 'sdk-cimd', version: '1.0.0' }, pinned);
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const before = (await alice.api('/v1/balance')).body.balance_base_units as number;
    const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { via: 'sdk-cimd' } } });
    expect(call.structuredContent).toMatchObject({ result: { echo: { via: 'sdk-cimd' } }, cost: { base_units: 100_000 } });
    expect((await alice.api('/v1/balance')).body.balance_base_units).toBe(before - 100_000);
    await client.close();
  });

  it('refuses, on an error page that never redirects, a document that is not usable, and a redirect URI the document does not list', async () => {
    const open = async (clientId: string, redirectUri = REDIRECT) => {
      const u = new URL(`${h.url}/authorize`);
      u.search = new URLSearchParams({
        client_id: clientId,
        redirect_uri: redirectUri,
        response_type: 'code',
        state: 's',
        code_challenge: 'a'.repeat(43),
        code_challenge_method: 'S256',
      }).toString();
      const r = await fetch(u, { headers: { cookie: alice.cookie }, redirect: 'manual' });
      const html = await r.text();
      return { status: r.status, error: /<p class="error">([^<]*)<\/p>/.exec(html)?.[1]?.replace(/&#39;/g, "'") };
    };
    const cannot = (path: string, why: string) => `the client metadata document at ${base}${path} cannot be used: ${why}`;
    expect(await open(`${base}/oauth/other-id.json`)).toEqual({
      status: 400,
      error: cannot('/oauth/other-id.json', 'its client_id is not the URL it was fetched from'),
    });
    expect(await open(`${base}/oauth/secret.json`)).toEqual({
      status: 400,
      error: cannot('/oauth/secret.json', 'token_endpoint_auth_method client_secret_basic is not supported for a metadata document (none only)'),
    });
    expect(await open(`${base}/oauth/big.json`)).toEqual({ status: 400, error: cannot('/oauth/big.json', 'larger than 5120 bytes') });
    expect(await open(`${base}/oauth/moved.json`)).toEqual({ status: 400, error: cannot('/oauth/moved.json', 'it answered with a redirect (not followed)') });
    expect(await open(`${base}/oauth/not-json.json`)).toEqual({ status: 400, error: cannot('/oauth/not-json.json', 'not JSON') });
    expect(await open(`${base}/oauth/missing.json`)).toEqual({ status: 400, error: cannot('/oauth/missing.json', 'it answered HTTP 404') });
    expect(await open(`${base}/oauth/slow.json`)).toEqual({ status: 400, error: cannot('/oauth/slow.json', 'no answer within 2000 ms') });
    // Private addresses stay out of reach, as for service endpoints.
    expect(await open('https://10.1.2.3/client.json')).toEqual({
      status: 400,
      error: 'the client metadata document at https://10.1.2.3/client.json cannot be used: endpoint resolves to a private or reserved address',
    });
    expect(await open(`${base}/`)).toEqual({ status: 400, error: 'a client_id URL must have a path' });
    // A redirect URI the document does not list.
    expect(await open(`${base}/oauth/client.json`, 'https://evil.example/cb')).toEqual({
      status: 400,
      error: 'redirect_uri is not registered for this client',
    });
  });

  it('refuses a document on loopback where loopback endpoints are not allowed (production), as for service endpoints', async () => {
    const strict = await startHarness('pglite', { allowLoopbackEndpoints: false, oauth: { clientMetadataDocuments: { ca: ca, timeoutMs: 2000 } } });
    try {
      const u = new URL(`${strict.url}/authorize`);
      u.search = new URLSearchParams({ client_id: `${base}/oauth/client.json`, redirect_uri: REDIRECT, response_type: 'code', state: 's' }).toString();
      const r = await fetch(u, { redirect: 'manual' });
      expect(r.status).toBe(400);
      expect(await r.text()).toContain(
        `the client metadata document at ${base}/oauth/client.json cannot be used: endpoint resolves to a private or reserved address`,
      );
    } finally {
      await strict.close();
    }
  });

  it('limits authorization requests naming a document URL per IP (they make the gateway fetch), like /register', async () => {
    const limited = await startHarness('pglite', { oauth: { registerPerMinute: 3 } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const u = new URL(`${limited.url}/authorize`);
        u.search = new URLSearchParams({ client_id: `https://10.9.8.${i}/client.json`, redirect_uri: REDIRECT, response_type: 'code' }).toString();
        const r = await fetch(u, { redirect: 'manual' });
        statuses.push(r.status);
        if (r.status === 429) {
          expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(await r.text()).toContain('too many authorization requests with a client metadata document from this address');
        }
      }
      expect(statuses).toEqual([400, 400, 400, 429]);
    } finally {
      await limited.close();
    }
  });

  it('still registers clients dynamically (deprecated by MCP), with application_type', async () => {
    const r = await fetch(`${h.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'DCR app', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', application_type: 'native' }),
    });
    expect(r.status).toBe(201);
    expect(await r.json()).toMatchObject({ client_name: 'DCR app', application_type: 'native' });
    const bad = await fetch(`${h.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [REDIRECT], application_type: 'desktop' }),
    });
    expect(await bad.json()).toEqual({ error: 'invalid_client_metadata', error_description: 'application_type must be native or web' });
  });
});
