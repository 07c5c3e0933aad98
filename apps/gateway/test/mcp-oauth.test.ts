import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, UnauthorizedError, type OAuthClientProvider, type OAuthDiscoveryState } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2, UnauthorizedError as UnauthorizedErrorV2 } from '@modelcontextprotocol/client';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { consent } from './oauth-browser.js';

/** An OAuth client provider as an MCP host implements it: keeps everything in memory and records where it would open the browser. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  readonly expectedState = randomBytes(8).toString('hex');

  constructor(private readonly name: string) {}
  get redirectUrl() {
    return 'http://127.0.0.1:33418/oauth/callback';
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  state() {
    return this.expectedState;
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
  discovery: OAuthDiscoveryState | undefined;
  saveDiscoveryState(state: OAuthDiscoveryState) {
    this.discovery = state;
  }
  discoveryState() {
    return this.discovery;
  }
  /** What a host does when the server says a credential is dead (e.g. `invalid_grant` on refresh). */
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'client') this.info = undefined;
    if (scope === 'all' || scope === 'verifier') this.verifier = '';
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
  }
}

describe('remote MCP server with OAuth, driven by the official MCP SDK clients', () => {
  let h: Harness;
  let alice: TestUser;
  let mcpUrl: URL;

  beforeAll(async () => {
    h = await startHarness('pglite');
    alice = await h.user();
    await h.publish('echo', { price: '0.01' });
    mcpUrl = new URL(`${h.url}/mcp`);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  async function credits(): Promise<number> {
    return (await alice.api('/v1/balance')).body.balance_base_units;
  }

  it('runs discovery from the 401, registration, PKCE, consent, token, tools, a paid call, refresh, revoke and ends on 401 (SDK v1)', async () => {
    // 1. Without a token: 401 pointing at the resource metadata, without an error code (RFC 6750 3.1).
    const bare = await fetch(mcpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(bare.status).toBe(401);
    expect(bare.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`);

    // 2. The SDK discovers, registers and builds the authorization URL (PKCE S256, resource).
    const provider = new MemoryProvider('Claude (test)');
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'e2e', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const authUrl = provider.authorizationUrl!;
    expect(provider.info?.client_id).toMatch(/^fbc_/);
    expect(authUrl.origin + authUrl.pathname).toBe(`${h.url}/authorize`);
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(`${h.url}/mcp`);

    // 3. The user consents in the browser; the redirect carries code, state and iss (RFC 9207).
    const { redirect, page } = await consent(h.url, authUrl, alice);
    expect(page.html).toContain('Claude (test)');
    expect(page.html).toContain('Daily spending limit');
    expect(redirect.origin + redirect.pathname).toBe(provider.redirectUrl);
    expect(redirect.searchParams.get('state')).toBe(provider.expectedState);
    expect(redirect.searchParams.get('iss')).toBe(h.url);
    await first.finishAuth(redirect.searchParams.get('code')!);
    expect(provider.saved?.access_token).toMatch(/^fbo_at_/);
    expect(provider.saved?.expires_in).toBe(30 * 24 * 3600);

    // 4. Connected: the four tools, with schemas.
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
    const callTool = tools.find((t) => t.name === 'call_agent')!;
    expect(callTool.inputSchema.required).toEqual(['service', 'payload']);
    expect(callTool.description).toContain('inside `payload`');

    // 5. A call that really pays the service.
    const before = await credits();
    const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { hello: 'mcp' } } });
    expect(call.isError).toBeFalsy();
    expect(call.structuredContent).toMatchObject({
      service: 'echo',
      result: { echo: { hello: 'mcp' } },
      cost: { lamports: 100_000, usd: 0.01 },
      paidWith: 'credit',
    });
    expect(JSON.parse((call.content as Array<{ text: string }>)[0]!.text)).toEqual(call.structuredContent);
    expect(await credits()).toBe(before - 100_000);
    const listed = await client.callTool({ name: 'list_agents', arguments: { query: 'echo' } });
    expect((listed.structuredContent as { services: Array<{ service: string }> }).services.map((s) => s.service)).toContain('echo');
    const balance = await client.callTool({ name: 'get_balance', arguments: {} });
    expect(balance.structuredContent).toMatchObject({ balance_base_units: before - 100_000 });
    const txs = await client.callTool({ name: 'get_transactions', arguments: {} });
    expect((txs.structuredContent as { transactions: Array<{ type: string; service: string }> }).transactions[0]).toMatchObject({
      type: 'call',
      service: 'echo',
    });

    // A failing call comes back as a tool error with the gateway's message, and charges nothing.
    const unknown = await client.callTool({ name: 'call_agent', arguments: { service: 'no-such-service', payload: {} } });
    expect(unknown.isError).toBe(true);
    expect((unknown.content as Array<{ text: string }>)[0]!.text).toBe('service not found');
    expect(unknown._meta?.['farebox/error']).toMatchObject({ error: 'service not found', code: 'NOT_FOUND' });
    expect(await credits()).toBe(before - 100_000);
    // A paid call the service fails: the tool error says what happened to the money.
    await h.registerRaw('mcp-down', 'http://127.0.0.1:9/', '0.01');
    const down = await client.callTool({ name: 'call_agent', arguments: { service: 'mcp-down', payload: {} } });
    expect(down.isError).toBe(true);
    expect((down.content as Array<{ text: string }>)[0]!.text).toBe(
      'service unreachable: connection refused (ECONNREFUSED); the 0.01 USD charge was refunded to your credits',
    );
    expect(await credits()).toBe(before - 100_000);

    // 6. Refresh: a new pair; the old access token keeps working until it expires, the old refresh token is spent.
    const old = provider.saved!;
    expect(await auth(provider, { serverUrl: mcpUrl })).toBe('AUTHORIZED');
    expect(provider.saved!.access_token).not.toBe(old.access_token);
    expect(provider.saved!.refresh_token).not.toBe(old.refresh_token);
    expect((await client.callTool({ name: 'get_balance', arguments: {} })).isError).toBeFalsy();

    // 7. Revoke the refresh token (RFC 7009): the whole grant dies, the client cannot refresh, and ends on 401.
    const revoked = await fetch(`${h.url}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: provider.saved!.refresh_token!, client_id: provider.info!.client_id }).toString(),
    });
    expect(revoked.status).toBe(200);
    const access = provider.saved!.access_token;
    await expect(client.listTools()).rejects.toBeInstanceOf(UnauthorizedError);
    const after = await fetch(mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${access}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: '{}',
    });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
    expect(after.headers.get('www-authenticate')).toContain(`resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`);
  });

  it('works with the v2 client line (@modelcontextprotocol/client) through the same flow', async () => {
    const provider = new MemoryProvider('v2 client');
    const first = new TransportV2(mcpUrl, { authProvider: provider });
    await expect(new ClientV2({ name: 'e2e-v2', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedErrorV2);
    const { redirect } = await consent(h.url, provider.authorizationUrl!, alice);
    // The v2 client checks iss against the issuer it discovered (RFC 9207) before redeeming the code.
    await first.finishAuth(redirect.searchParams);
    const client = new ClientV2({ name: 'e2e-v2', version: '1.0.0' });
    await client.connect(new TransportV2(mcpUrl, { authProvider: provider }));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['list_agents', 'call_agent', 'get_balance', 'get_transactions']);
    const before = await credits();
    const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { v: 2 } } });
    expect(call.isError).toBeFalsy();
    expect(await credits()).toBe(before - 100_000);
    await client.close();
  });

  it('answers GET and DELETE on /mcp with 405 and refuses a foreign Origin with 403', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(mcpUrl, { method });
      expect(r.status, method).toBe(405);
      expect(r.headers.get('allow')).toBe('POST');
    }
    const foreign = await fetch(mcpUrl, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' });
    expect(foreign.status).toBe(403);
    const own = await fetch(mcpUrl, { method: 'POST', headers: { origin: new URL(h.url).origin, 'content-type': 'application/json' }, body: '{}' });
    expect(own.status).toBe(401);
  });

  it('publishes the RFC 9728 and RFC 8414 metadata the flow starts from', async () => {
    const prm = await (await fetch(`${h.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({ resource: `${h.url}/mcp`, authorization_servers: [h.url], bearer_methods_supported: ['header'] });
    const as = await (await fetch(`${h.url}/.well-known/oauth-authorization-server`)).json();
    expect(as).toMatchObject({
      issuer: h.url,
      authorization_endpoint: `${h.url}/authorize`,
      token_endpoint: `${h.url}/token`,
      registration_endpoint: `${h.url}/register`,
      revocation_endpoint: `${h.url}/revoke`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none', 'client_secret_basic', 'client_secret_post'],
      authorization_response_iss_parameter_supported: true,
    });
  });
});
