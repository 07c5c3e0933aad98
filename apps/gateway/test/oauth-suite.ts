import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponses, recordResponses } from './contract-kit.js';
import { startHarness, type DbKind, type Harness, type TestUser } from './harness.js';
import { consent, NO_CONFIRMATIONS, pkce, rawClient } from './oauth-browser.js';

const DAY = 24 * 3600 * 1000;

/** The authorization server suite; runs on PGlite (oauth.test.ts) and on the PostgreSQL server (oauth.pg.test.ts). */
export function oauthSuite(kind: DbKind) {
  describe(`OAuth 2.1 authorization server on ${kind} (RFC 9700 points, spending limit, connections)`, () => {
    let h: Harness;
    let alice: TestUser;
    let offset = 0;

    beforeAll(async () => {
      // The gateway's clock (and its services'): the tests below move it to expire codes, tokens and spending days.
      h = await startHarness(kind, { now: () => Date.now() + offset, oauth: { registerPerMinute: 60 } });
      alice = await h.user();
      await h.publish('echo', { price: '0.01' });
    }, 120_000);

    // Every answer the suite gets from the gateway, checked against the contract at the end.
    const recorder = recordResponses(
      () => h?.url,
      () => expect.getState().currentTestName,
    );

    afterAll(async () => {
      recorder.stop();
      await h?.close();
    });

    /** A raw 2025-era POST to /mcp; `json()` reads the answer whether it came as JSON or as one SSE event. */
    const mcp = async (token: string, body: unknown = { jsonrpc: '2.0', id: 1, method: 'tools/list' }) => {
      const res = await fetch(`${h.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      const data = /^data: (.*)$/m.exec(text);
      return { status: res.status, headers: res.headers, json: async () => JSON.parse(data ? data[1]! : text) as unknown };
    };
    const bearer = (token: string) => ({
      api: (path: string, init: { method?: string; body?: unknown } = {}) => alice.api(path, { ...init, headers: { authorization: `Bearer ${token}` } }),
    });
    it('runs the whole flow with a third-party client (oauth4webapi, confidential client_secret_basic)', async () => {
      const issuer = new URL(h.url);
      const insecure = { [oauth.allowInsecureRequests]: true };
      const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
      const redirectUri = 'http://localhost:8976/cb';
      const registered = await oauth.processDynamicClientRegistrationResponse(
        await oauth.dynamicClientRegistrationRequest(
          as,
          { redirect_uris: [redirectUri], client_name: 'oauth4webapi app', token_endpoint_auth_method: 'client_secret_basic' },
          insecure,
        ),
      );
      const client: oauth.Client = { client_id: registered.client_id };
      const clientAuth = oauth.ClientSecretBasic(registered.client_secret as string);
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint!);
      url.search = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: redirectUri,
        response_type: 'code',
        scope: 'agents:read agents:call account:read',
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        resource: `${h.url}/mcp`,
      }).toString();
      const { redirect } = await consent(h.url, url, alice);
      // validateAuthResponse checks iss against the discovered issuer (the server advertises RFC 9207).
      const params = oauth.validateAuthResponse(as, client, redirect, state);
      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, verifier, {
          additionalParameters: { resource: `${h.url}/mcp` },
          ...insecure,
        }),
      );
      expect(tokens.token_type).toBe('bearer');
      expect(tokens.expires_in).toBe(2_592_000);
      const list = await mcp(tokens.access_token);
      expect(list.status).toBe(200);
      expect(((await list.json()) as { result: { tools: unknown[] } }).result.tools).toHaveLength(4);
      // The same access token works on /v1.
      expect((await bearer(tokens.access_token).api('/v1/balance')).status).toBe(200);

      const refreshed = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
      );
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
      expect((await mcp(refreshed.access_token)).status).toBe(200);

      await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, insecure));
      expect((await mcp(refreshed.access_token)).status).toBe(401);
      await expect(
        oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshed.refresh_token!, insecure)),
      ).rejects.toMatchObject({ error: 'invalid_grant' });
    });

    it('authenticates confidential clients with client_secret_post too, refuses a wrong secret, and stores secrets and tokens only hashed', async () => {
      const c = await rawClient(h.url, { token_endpoint_auth_method: 'client_secret_post' });
      const secret = c.client.client_secret!;
      const p = pkce();
      const { redirect } = await consent(h.url, c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }), alice);
      const code = redirect.searchParams.get('code')!;
      const wrong = await c.token({
        grant_type: 'authorization_code',
        code,
        redirect_uri: c.redirectUri,
        code_verifier: p.verifier,
        client_secret: 'fbs_wrong',
      });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error).toBe('invalid_client');
      const { redirect: again } = await consent(h.url, c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }), alice);
      const ok = await c.token({
        grant_type: 'authorization_code',
        code: again.searchParams.get('code')!,
        redirect_uri: c.redirectUri,
        code_verifier: p.verifier,
        client_secret: secret,
      });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('cache-control')).toBe('no-store');
      const db = h.gw.core.db;
      const stored = await db.query<{ secret_hash: string }>('SELECT secret_hash FROM gw_oauth_clients WHERE client_id = $1', [c.client.client_id]);
      expect(stored.rows[0]!.secret_hash).toMatch(/^[0-9a-f]{64}$/);
      const plain = await db.query('SELECT 1 FROM gw_oauth_tokens WHERE token_hash = ANY($1::text[])', [[ok.body.access_token, ok.body.refresh_token]]);
      expect(plain.rows).toHaveLength(0);
    });

    it('refuses to register redirect URIs that are neither https nor loopback, and implicit or password grants', async () => {
      const register = (body: unknown) =>
        fetch(`${h.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      for (const uri of ['http://evil.example/cb', 'myapp://callback', 'https://app.example/cb#frag', 'javascript:alert(1)']) {
        const r = await register({ redirect_uris: [uri], token_endpoint_auth_method: 'none' });
        expect(r.status, uri).toBe(400);
        expect(((await r.json()) as { error: string }).error, uri).toBe('invalid_redirect_uri');
      }
      for (const grant of ['implicit', 'password', 'client_credentials']) {
        const r = await register({ redirect_uris: ['https://app.example/cb'], grant_types: [grant] });
        expect(r.status, grant).toBe(400);
        expect(((await r.json()) as { error: string }).error).toBe('invalid_client_metadata');
      }
      for (const uri of ['https://app.example/cb', 'http://127.0.0.1/cb', 'http://localhost:3000/cb', 'http://[::1]:9/cb']) {
        expect((await register({ redirect_uris: [uri], token_endpoint_auth_method: 'none' })).status, uri).toBe(201);
      }
    });

    it('shows an error page without redirecting for an unregistered redirect URI, accepts another loopback port, and checks redirect_uri at the token endpoint', async () => {
      const c = await rawClient(h.url);
      const p = pkce();
      for (const bad of ['http://127.0.0.1:41999/other', 'https://evil.example/callback', 'http://localhost:41999/callback']) {
        const r = await fetch(c.authorizeUrl({ redirect_uri: bad, code_challenge: p.challenge, code_challenge_method: 'S256' }), {
          headers: { cookie: alice.cookie },
          redirect: 'manual',
        });
        expect(r.status, bad).toBe(400);
        expect(r.headers.get('location'), bad).toBeNull();
        expect(await r.text()).toContain('redirect_uri is not registered');
      }
      // A loopback redirect URI may use another port (RFC 8252 7.3).
      const otherPort = 'http://127.0.0.1:50123/callback';
      const { redirect } = await consent(h.url, c.authorizeUrl({ redirect_uri: otherPort, code_challenge: p.challenge, code_challenge_method: 'S256' }), alice);
      expect(redirect.origin + redirect.pathname).toBe(otherPort);
      // At /token the redirect_uri must be the one used at /authorize.
      const t = await c.token({
        grant_type: 'authorization_code',
        code: redirect.searchParams.get('code')!,
        redirect_uri: c.redirectUri,
        code_verifier: p.verifier,
      });
      expect(t.status).toBe(400);
      expect(t.body).toEqual({ error: 'invalid_grant', error_description: 'redirect_uri does not match the one of the authorization request' });
    });

    it('requires PKCE with S256: a missing or plain challenge is refused, and the verifier is checked', async () => {
      const c = await rawClient(h.url);
      const open = async (params: Record<string, string | undefined>) => {
        const r = await fetch(c.authorizeUrl(params), { headers: { cookie: alice.cookie }, redirect: 'manual' });
        expect(r.status).toBe(302);
        return new URL(r.headers.get('location')!);
      };
      const missing = await open({});
      expect(missing.searchParams.get('error')).toBe('invalid_request');
      expect(missing.searchParams.get('error_description')).toContain('code_challenge required');
      expect(missing.searchParams.get('state')).toBe('st-123');
      expect(missing.searchParams.get('iss')).toBe(h.url);
      const p = pkce();
      const plain = await open({ code_challenge: p.verifier, code_challenge_method: 'plain' });
      expect(plain.searchParams.get('error')).toBe('invalid_request');
      expect(plain.searchParams.get('error_description')).toBe('code_challenge_method must be S256');
      const noMethod = await open({ code_challenge: p.challenge });
      expect(noMethod.searchParams.get('error')).toBe('invalid_request');

      const { redirect } = await consent(h.url, c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }), alice);
      const noVerifier = await c.token({ grant_type: 'authorization_code', code: redirect.searchParams.get('code')!, redirect_uri: c.redirectUri });
      expect(noVerifier.body.error).toBe('invalid_request');
      const { redirect: r2 } = await consent(h.url, c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }), alice);
      const wrongVerifier = await c.token({
        grant_type: 'authorization_code',
        code: r2.searchParams.get('code')!,
        redirect_uri: c.redirectUri,
        code_verifier: pkce().verifier,
      });
      expect(wrongVerifier.body).toEqual({ error: 'invalid_grant', error_description: 'code_verifier does not match the code_challenge' });
    });

    it('accepts a code once: reusing it fails with invalid_grant and revokes the tokens it issued', async () => {
      const c = await rawClient(h.url);
      const { code, verifier, tokens } = await c.authorize(alice);
      expect((await mcp(tokens.access_token)).status).toBe(200);
      const reuse = await c.token({ grant_type: 'authorization_code', code, redirect_uri: c.redirectUri, code_verifier: verifier });
      expect(reuse.status).toBe(400);
      expect(reuse.body.error).toBe('invalid_grant');
      expect((await mcp(tokens.access_token)).status).toBe(401);
      expect((await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token })).body.error).toBe('invalid_grant');
    });

    it('rotates refresh tokens: a retry inside the grace window gets the same pair, a later reuse revokes the whole family', async () => {
      const c = await rawClient(h.url);
      const { tokens } = await c.authorize(alice);
      const first = await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
      expect(first.status).toBe(200);
      const retry = await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
      expect(retry.status).toBe(200);
      expect(retry.body.access_token).toBe(first.body.access_token);
      expect(retry.body.refresh_token).toBe(first.body.refresh_token);

      offset += 31_000;
      try {
        const reuse = await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
        expect(reuse.status).toBe(400);
        expect(reuse.body.error).toBe('invalid_grant');
        // The family is gone: the rotated pair is dead too.
        expect((await mcp(first.body.access_token)).status).toBe(401);
        const successor = await c.token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token });
        expect(successor.body).toEqual({ error: 'invalid_grant', error_description: 'refresh token revoked' });
      } finally {
        offset -= 31_000;
      }
      // A refresh token the server never issued: invalid_grant as well.
      expect((await c.token({ grant_type: 'refresh_token', refresh_token: 'fbo_rt_unknown' })).body.error).toBe('invalid_grant');
    });

    it('binds tokens to the /mcp resource: another resource is refused at /authorize and at /token', async () => {
      const c = await rawClient(h.url);
      const p = pkce();
      const r = await fetch(c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256', resource: 'https://other.example/mcp' }), {
        headers: { cookie: alice.cookie },
        redirect: 'manual',
      });
      expect(r.status).toBe(302);
      expect(new URL(r.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');
      const { redirect } = await consent(h.url, c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' }), alice);
      const t = await c.token({
        grant_type: 'authorization_code',
        code: redirect.searchParams.get('code')!,
        redirect_uri: c.redirectUri,
        code_verifier: p.verifier,
        resource: 'https://other.example/mcp',
      });
      expect(t.body.error).toBe('invalid_target');
      const { tokens } = await c.authorize(alice);
      expect((await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token, resource: `${h.url}/v1` })).body.error).toBe('invalid_target');
      const rows = await h.gw.core.db.query<{ resource: string }>('SELECT DISTINCT resource FROM gw_oauth_tokens');
      expect(rows.rows.map((x) => x.resource)).toEqual([`${h.url}/mcp`]);
    });

    it('expires access tokens after 30 days (401 on /mcp and /v1); the refresh token still renews them', async () => {
      const c = await rawClient(h.url);
      const { tokens } = await c.authorize(alice);
      offset += 30 * DAY + 1000;
      try {
        const expired = await mcp(tokens.access_token);
        expect(expired.status).toBe(401);
        expect(expired.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
        expect((await bearer(tokens.access_token).api('/v1/balance')).status).toBe(401);
        const renewed = await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token });
        expect(renewed.status).toBe(200);
        expect((await mcp(renewed.body.access_token)).status).toBe(200);
      } finally {
        offset -= 30 * DAY + 1000;
      }
    });

    it('lists connections and disconnects one: its tokens stop working at once; unknown ids give 404', async () => {
      const bob = await h.user();
      const c = await rawClient(h.url, { client_name: 'Bob assistant' });
      const { tokens } = await c.authorize(bob, { dailyLimitUsd: '2.5' });
      const list = await bob.api('/v1/oauth/connections');
      expect(list.status).toBe(200);
      expect(list.body).toHaveLength(1);
      const conn = list.body[0];
      expect(conn).toMatchObject({
        client_id: c.client.client_id,
        client_name: 'Bob assistant',
        scopes: ['agents:read', 'agents:call', 'account:read'],
        daily_limit_usd: 2.5,
        spent_today_usd: 0,
      });
      expect(Object.keys(conn).sort()).toEqual(
        [
          'client_id',
          'client_name',
          'confirm_above_usd',
          'confirm_below_left_percent',
          'confirm_by_app',
          'created_at',
          'daily_limit_base_units',
          'daily_limit_usd',
          'id',
          'last_used_at',
          'limit_period',
          'limit_usd',
          'max_call_usd',
          'remaining_usd',
          'resets_at',
          'scopes',
          'spent_today_base_units',
          'spent_today_usd',
          'spent_usd',
          'allowed_services',
        ].sort(),
      );
      // The consent page's daily limit is a spending policy of period day (docs/api.md, "Spending policies").
      expect(conn).toMatchObject({ limit_usd: 2.5, limit_period: 'day', spent_usd: 0, remaining_usd: 2.5 });
      expect((await mcp(tokens.access_token)).status).toBe(200);
      // An OAuth token cannot manage credentials (it could otherwise escape its limit).
      expect((await bearer(tokens.access_token).api('/v1/api-keys', { body: { name: 'escape' } })).status).toBe(403);
      expect((await bearer(tokens.access_token).api(`/v1/oauth/connections/${conn.id}`, { method: 'DELETE' })).status).toBe(403);

      expect((await alice.api(`/v1/oauth/connections/${conn.id}`, { method: 'DELETE' })).status).toBe(404);
      const del = await bob.api(`/v1/oauth/connections/${conn.id}`, { method: 'DELETE' });
      expect(del.status).toBe(200);
      expect((await mcp(tokens.access_token)).status).toBe(401);
      expect((await c.token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token })).body.error).toBe('invalid_grant');
      expect((await bob.api('/v1/oauth/connections')).body).toEqual([]);
      expect((await bob.api(`/v1/oauth/connections/${conn.id}`, { method: 'DELETE' })).status).toBe(404);
      expect((await bob.api('/v1/oauth/connections/conn_unknown', { method: 'DELETE' })).status).toBe(404);
    });

    it('enforces the daily spending limit on every call of the connection, before anything is charged, also in parallel', async () => {
      const carol = await h.user();
      const c = await rawClient(h.url);
      const { tokens } = await c.authorize(carol, { dailyLimitUsd: '0.015', fields: NO_CONFIRMATIONS });
      const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
        carol.api(path, { ...init, headers: { authorization: `Bearer ${tokens.access_token}` } });
      const start = (await carol.api('/v1/balance')).body.balance_base_units as number;
      expect((await api('/v1/call', { body: { service: 'echo', payload: { n: 1 } } })).status).toBe(200);
      const over = await api('/v1/call', { body: { service: 'echo', payload: { n: 2 } } });
      expect(over.status).toBe(402);
      const midnight = new Date(Math.floor((Date.now() + offset) / DAY) * DAY + DAY).toISOString();
      expect(over.body).toMatchObject({
        error: `spending limit reached: this connection may spend $0.015 per day (UTC); $0.005 is left until ${midnight} and this call costs $0.01`,
        limit_source: 'connection',
        limit_usd: 0.015,
        remaining_usd: 0.005,
        resets_at: midnight,
      });
      expect((await carol.api('/v1/balance')).body.balance_base_units).toBe(start - 100_000);
      // The MCP tool reports the same refusal as a tool error.
      const tool = await mcp(tokens.access_token, {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'call_agent', arguments: { service: 'echo', payload: {} } },
      });
      const result = ((await tool.json()) as { result: { isError: boolean; content: Array<{ text: string }>; _meta?: Record<string, unknown> } }).result;
      expect(result.isError).toBe(true);
      expect(result.content[0]!.text).toContain('spending limit reached: this connection may spend $0.015 per day (UTC)');
      // The tool error carries the refusal's fields (its _meta, as every tool error's details).
      expect(result._meta?.['farebox/error']).toMatchObject({ code: 'SPENDING_LIMIT', limit_source: 'connection', limit_usd: 0.015, remaining_usd: 0.005 });
      // get_balance shows the connection's own budget next to the account's money.
      const bal = await mcp(tokens.access_token, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_balance', arguments: {} } });
      const balText = ((await bal.json()) as { result: { content: Array<{ text: string }> } }).result.content[0]!.text;
      expect(JSON.parse(balText).spending_policy).toMatchObject({ limit_usd: 0.015, limit_period: 'day', spent_usd: 0.01, remaining_usd: 0.005 });
      // An API key of the same account is not limited by the connection.
      expect((await carol.api('/v1/call', { body: { service: 'echo', payload: {} } })).status).toBe(200);
      expect((await carol.api('/v1/oauth/connections')).body[0]).toMatchObject({ spent_today_usd: 0.01, spent_today_base_units: 100_000 });

      // A new UTC day starts from zero.
      offset += DAY;
      try {
        expect((await api('/v1/call', { body: { service: 'echo', payload: { day: 2 } } })).status).toBe(200);
      } finally {
        offset -= DAY;
      }

      // Parallel calls cannot pass the limit together: 0.03 allows exactly three calls of 0.01.
      const dave = await h.user();
      const d = await rawClient(h.url);
      const { tokens: dt } = await d.authorize(dave, { dailyLimitUsd: '0.03', fields: NO_CONFIRMATIONS });
      const before = (await dave.api('/v1/balance')).body.balance_base_units as number;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          dave.api('/v1/call', { body: { service: 'echo', payload: { i } }, headers: { authorization: `Bearer ${dt.access_token}` } }),
        ),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(3);
      expect(results.filter((r) => r.status === 402)).toHaveLength(5);
      expect((await dave.api('/v1/balance')).body.balance_base_units).toBe(before - 300_000);
    });

    it('gives back the reserved amount when a call fails and is refunded', async () => {
      const erin = await h.user();
      await h.publish('broken', {
        price: '0.01',
        handler: () => {
          throw new Error('boom');
        },
      });
      const c = await rawClient(h.url);
      const { tokens } = await c.authorize(erin, { dailyLimitUsd: '0.01', fields: NO_CONFIRMATIONS });
      const call = (service: string) => erin.api('/v1/call', { body: { service, payload: {} }, headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect((await call('broken')).status).toBe(500);
      expect((await erin.api('/v1/oauth/connections')).body[0].spent_today_usd).toBe(0);
      expect((await call('echo')).status).toBe(200);
    });

    // The connection (the user's grant to a client) is the source of truth: its scopes, its daily limit and its revocation apply to every token at once.
    const grantKit = async () => {
      const user = await h.user();
      const c = await rawClient(h.url);
      const as =
        (token: string) =>
        (path: string, init: { method?: string; body?: unknown } = {}) =>
          user.api(path, { ...init, headers: { authorization: `Bearer ${token}` } });
      return { user, c, as };
    };
    const ALL = 'agents:read agents:call account:read';
    const NO_ACCOUNT = 'this connection was not granted the account:read scope';

    it('narrows the tokens already issued when the user re-authorises with fewer scopes and a lower daily limit; disconnecting then kills both tokens', async () => {
      const { user: frank, c, as } = await grantKit();
      const { tokens: old } = await c.authorize(frank);
      expect(old.scope).toBe(ALL);
      const oldApi = as(old.access_token);
      expect((await oldApi('/v1/balance')).status).toBe(200);
      expect((await oldApi('/v1/call', { body: { service: 'echo', payload: { n: 1 } } })).status).toBe(200);
      const balanceTool = { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'get_balance', arguments: {} } };
      const toolResult = async (token: string) =>
        ((await (await mcp(token, balanceTool)).json()) as { result: { isError?: boolean; content: Array<{ text: string }> } }).result;
      /** A tool the token may no longer use: 403 with the challenge naming the scope to ask for (step-up). */
      const stepUp = async (token: string) => {
        const r = await mcp(token, balanceTool);
        return { status: r.status, challenge: r.headers.get('www-authenticate') };
      };
      expect((await toolResult(old.access_token)).isError).toBeFalsy();

      // The user re-authorises the same client without account:read and with a daily limit of $0.025.
      const { tokens: narrow } = await c.authorize(frank, { scope: 'agents:read agents:call', dailyLimitUsd: '0.025' });
      expect(narrow.scope).toBe('agents:read agents:call');
      const narrowBalance = await as(narrow.access_token)('/v1/balance');
      expect({ status: narrowBalance.status, error: narrowBalance.body.error }).toEqual({ status: 403, error: NO_ACCOUNT });
      // The old access token: refused on the removed scope with the very answer a token issued narrow gets, on /v1 and through MCP ...
      const oldBalance = await oldApi('/v1/balance');
      expect(oldBalance.status).toBe(403);
      expect(oldBalance.body).toEqual(narrowBalance.body);
      expect(await stepUp(old.access_token)).toEqual({
        status: 403,
        challenge: `Bearer error="insufficient_scope", error_description="${NO_ACCOUNT}", scope="account:read", resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`,
      });
      // ... allowed on the scopes kept, within the new daily limit (what the connection spent while it had no
      // limit is not counted: a credential without a policy takes no budget step): two calls of $0.01, not a third.
      expect((await oldApi('/v1/agents')).status).toBe(200);
      expect((await oldApi('/v1/call', { body: { service: 'echo', payload: { n: 2 } } })).status).toBe(200);
      expect((await oldApi('/v1/call', { body: { service: 'echo', payload: { n: 3 } } })).status).toBe(200);
      const over = await oldApi('/v1/call', { body: { service: 'echo', payload: { n: 4 } } });
      expect(over.status).toBe(402);
      expect(over.body.error).toMatch(
        /^spending limit reached: this connection may spend \$0\.025 per day \(UTC\); \$0\.005 is left until \S+ and this call costs \$0\.01$/,
      );

      // The old refresh token cannot get the removed scope back, and a refresh answers the narrowed scope.
      const widen = await c.token({ grant_type: 'refresh_token', refresh_token: old.refresh_token, scope: 'account:read' });
      expect(widen.body).toEqual({ error: 'invalid_scope', error_description: 'scope exceeds what was granted' });
      const refreshed = await c.token({ grant_type: 'refresh_token', refresh_token: old.refresh_token });
      expect(refreshed.status).toBe(200);
      expect(refreshed.body.scope).toBe('agents:read agents:call');
      expect((await as(refreshed.body.access_token)('/v1/balance')).body.error).toBe(NO_ACCOUNT);
      // A retry inside the grace window answers the same pair with the same narrowed scope.
      const retry = await c.token({ grant_type: 'refresh_token', refresh_token: old.refresh_token });
      expect(retry.body).toMatchObject({
        access_token: refreshed.body.access_token,
        refresh_token: refreshed.body.refresh_token,
        scope: 'agents:read agents:call',
      });

      // Disconnecting kills every access and refresh token of the connection at once: 401 invalid_token on /v1 and /mcp, invalid_grant on refresh.
      const [conn] = (await frank.api('/v1/oauth/connections')).body;
      expect((await frank.api(`/v1/oauth/connections/${conn.id}`, { method: 'DELETE' })).status).toBe(200);
      for (const token of [old.access_token, refreshed.body.access_token, narrow.access_token]) {
        const v1 = await as(token)('/v1/agents');
        expect(v1.status).toBe(401);
        expect(v1.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
        const m = await mcp(token);
        expect(m.status).toBe(401);
        expect(m.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
      }
      for (const token of [refreshed.body.refresh_token, narrow.refresh_token]) {
        expect((await c.token({ grant_type: 'refresh_token', refresh_token: token })).body).toEqual({
          error: 'invalid_grant',
          error_description: 'refresh token revoked',
        });
      }
    });

    it('widens the tokens of the connection when the user re-authorises with more scopes, except where the client narrowed a token itself; a narrowing racing a refresh still binds the new token', async () => {
      const { user: gina, c, as } = await grantKit();
      const { tokens: first } = await c.authorize(gina, { scope: 'agents:read agents:call' });
      expect(first.scope).toBe('agents:read agents:call');
      expect((await as(first.access_token)('/v1/balance')).body.error).toBe(NO_ACCOUNT);
      // The client narrows one family itself at a refresh; it keeps asking for less on the next refresh.
      const { tokens: second } = await c.authorize(gina, { scope: 'agents:read agents:call' });
      const down = await c.token({ grant_type: 'refresh_token', refresh_token: second.refresh_token, scope: 'agents:read' });
      expect(down.body.scope).toBe('agents:read');
      expect((await as(down.body.access_token)('/v1/call', { body: { service: 'echo', payload: {} } })).body.error).toBe(
        'this connection was not granted the agents:call scope',
      );

      // Re-authorising with more: every token of the connection carries the granted set, the old access and refresh tokens included.
      await c.authorize(gina, { scope: ALL });
      expect((await as(first.access_token)('/v1/balance')).status).toBe(200);
      const wide = await c.token({ grant_type: 'refresh_token', refresh_token: first.refresh_token });
      expect(wide.body.scope).toBe(ALL);
      expect((await as(wide.body.access_token)('/v1/balance')).status).toBe(200);
      // The family the client narrowed stays within what it asked for.
      expect((await as(down.body.access_token)('/v1/balance')).body.error).toBe(NO_ACCOUNT);
      const downAgain = await c.token({ grant_type: 'refresh_token', refresh_token: down.body.refresh_token });
      expect(downAgain.body.scope).toBe('agents:read');

      // A narrowing that races a refresh: whatever the order, the new pair cannot use the removed scopes.
      const [raced] = await Promise.all([
        c.token({ grant_type: 'refresh_token', refresh_token: wide.body.refresh_token }),
        c.authorize(gina, { scope: 'agents:read' }),
      ]);
      expect(raced.status).toBe(200);
      expect((await as(raced.body.access_token)('/v1/call', { body: { service: 'echo', payload: {} } })).body.error).toBe(
        'this connection was not granted the agents:call scope',
      );
      expect((await as(raced.body.access_token)('/v1/agents')).status).toBe(200);
      expect((await c.token({ grant_type: 'refresh_token', refresh_token: raced.body.refresh_token })).body.scope).toBe('agents:read');

      // A code issued under an earlier consent gives tokens with the connection's scopes when it is redeemed.
      const p = pkce();
      const { redirect } = await consent(h.url, c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256', scope: ALL }), gina);
      await c.authorize(gina, { scope: 'account:read' });
      const late = await c.token({
        grant_type: 'authorization_code',
        code: redirect.searchParams.get('code')!,
        redirect_uri: c.redirectUri,
        code_verifier: p.verifier,
      });
      expect(late.body.scope).toBe('account:read');
      expect((await as(late.body.access_token)('/v1/agents')).body.error).toBe('this connection was not granted the agents:read scope');
      // The family the client narrowed to agents:read has nothing left: refused on every route, and its refresh is invalid_grant.
      expect((await as(downAgain.body.access_token)('/v1/agents')).body.error).toBe('this connection was not granted the agents:read scope');
      expect((await c.token({ grant_type: 'refresh_token', refresh_token: downAgain.body.refresh_token })).body).toEqual({
        error: 'invalid_grant',
        error_description: 'the connection no longer grants any scope this token was narrowed to; authorize again',
      });
    });

    it('protects the consent screen: clickjacking headers, CSRF on the consent post, sign-in form without a session, deny redirects with access_denied', async () => {
      const c = await rawClient(h.url, { client_name: '<script>alert(1)</script>' });
      const p = pkce();
      const url = c.authorizeUrl({ code_challenge: p.challenge, code_challenge_method: 'S256' });
      const page = await fetch(url, { headers: { cookie: alice.cookie } });
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      const html = await page.text();
      expect(html).not.toContain('<script>alert(1)</script>');
      expect(html).toContain('&lt;script&gt;');

      const anonymous = await fetch(url);
      expect(anonymous.headers.get('x-frame-options')).toBe('DENY');
      const signIn = await anonymous.text();
      expect(signIn).toContain('action="/auth/login"');
      expect(signIn).toContain(`name="next" value="${`/authorize${url.search}`.replace(/&/g, '&amp;')}"`);

      const fields = new URLSearchParams({
        client_id: c.client.client_id,
        redirect_uri: c.redirectUri,
        response_type: 'code',
        code_challenge: p.challenge,
        code_challenge_method: 'S256',
        decision: 'allow',
      });
      const noCsrf = await fetch(`${h.url}/authorize`, {
        method: 'POST',
        headers: { cookie: alice.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: fields.toString(),
        redirect: 'manual',
      });
      expect(noCsrf.status).toBe(403);
      expect(noCsrf.headers.get('location')).toBeNull();
      fields.set('_csrf', alice.csrf);
      const crossSite = await fetch(`${h.url}/authorize`, {
        method: 'POST',
        headers: { cookie: alice.cookie, 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
        body: fields.toString(),
        redirect: 'manual',
      });
      expect(crossSite.status).toBe(403);

      const denied = await consent(h.url, url, alice, { decision: 'deny' });
      expect(denied.redirect.searchParams.get('error')).toBe('access_denied');
      expect(denied.redirect.searchParams.get('iss')).toBe(h.url);
      expect(denied.redirect.searchParams.get('code')).toBeNull();

      const badLimit = await fetch(`${h.url}/authorize`, {
        method: 'POST',
        headers: { cookie: alice.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ ...Object.fromEntries(fields), limit_usd: 'lots', limit_period: 'day' }).toString(),
        redirect: 'manual',
      });
      expect(badLimit.status).toBe(400);
      expect(await badLimit.text()).toContain('limit_usd must be a USD amount such as 5 or 2.50');
    });

    it('limits /register per IP with the shared rate-limit store', async () => {
      let limited: Response | undefined;
      for (let i = 0; i < 70 && !limited; i++) {
        const r = await fetch(`${h.url}/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }),
        });
        if (r.status === 429) limited = r;
      }
      expect(limited).toBeDefined();
      expect(limited!.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await limited!.json()).toEqual({ error: 'temporarily_unavailable', error_description: 'rate limit exceeded' });
    });
    it('answers every /v1 request of this suite (OAuth tokens, scopes, spending limits) as its operation declares, against the served OpenAPI document', async () => {
      const doc = await (await fetch(`${h.url}/openapi.json`)).json();
      const report = await checkResponses(
        doc,
        recorder.responses.filter((r) => !r.path.startsWith('/openapi.json')),
      );
      expect(report.violations).toEqual([]);
      // The OAuth protocol endpoints and /mcp are outside the REST table.
      const outside = /^\/(devnet\/|register|token|revoke|authorize|mcp|\.well-known\/)/;
      expect(report.unmatched.filter((u) => !outside.test(u.split(' ')[1]!))).toEqual([]);
      const ops = new Set([...report.checked].map((c) => c.split(' ')[0]));
      for (const id of ['listOAuthConnections', 'revokeOAuthConnection', 'call', 'balance']) expect(ops, id).toContain(id);
    });
  });
}
