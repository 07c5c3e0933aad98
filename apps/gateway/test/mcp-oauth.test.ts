import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { MemoryProvider } from './mcp-kit.js';
import { consent, rawClient } from './oauth-browser.js';

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
    expect(bare.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp", scope="agents:read agents:call account:read"`,
    );

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
    expect(page.html).toContain('Spending limit (USD, optional)');
    expect(redirect.origin + redirect.pathname).toBe(provider.redirectUrl);
    expect(redirect.searchParams.get('state')).toBe(provider.expectedState);
    expect(redirect.searchParams.get('iss')).toBe(h.url);
    await first.finishAuth(redirect.searchParams.get('code')!);
    expect(provider.saved?.access_token).toMatch(/^fbo_at_/);
    expect(provider.saved?.expires_in).toBe(30 * 24 * 3600);

    // 4. Connected (the 2025-11-25 handshake): the four tools, with schemas.
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await client.connect(transport);
    expect(transport.protocolVersion).toBe('2025-11-25');
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
    // Each service carries its health (docs/api.md, "Service health"): the call above is counted once the gateway writes its counts.
    await h.gw.core.serviceHealth.sync();
    const relisted = (await client.callTool({ name: 'list_agents', arguments: { query: 'echo' } })).structuredContent as {
      services: Array<{ service: string; health: { status: string; windows: { '1h': { calls: number } } } }>;
    };
    expect(relisted.services.find((s) => s.service === 'echo')?.health).toMatchObject({ status: 'new', windows: { '1h': { calls: 1 } } });
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

  it('answers every method without a token with the 401 challenge, GET and DELETE with a token with 405, and refuses a foreign Origin with 403', async () => {
    const expected = `Bearer resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp", scope="agents:read agents:call account:read"`;
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const r = await fetch(mcpUrl, { method });
      expect(r.status, method).toBe(401);
      expect(r.headers.get('www-authenticate'), method).toBe(expected);
    }
    const token = (await (await rawClient(h.url)).authorize(alice)).tokens.access_token;
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(mcpUrl, { method, headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' } });
      expect(r.status, method).toBe(405);
    }
    const foreign = await fetch(mcpUrl, { method: 'POST', headers: { origin: 'https://evil.example', 'content-type': 'application/json' }, body: '{}' });
    expect(foreign.status).toBe(403);
    const own = await fetch(mcpUrl, { method: 'POST', headers: { origin: new URL(h.url).origin, 'content-type': 'application/json' }, body: '{}' });
    expect(own.status).toBe(401);
  });

  it('publishes the RFC 9728 and RFC 8414 metadata the flow starts from', async () => {
    const prm = await (await fetch(`${h.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({ resource: `${h.url}/mcp`, authorization_servers: [h.url], bearer_methods_supported: ['header'] });
    // The same document at the root well-known URL, for clients that look there first.
    expect(await (await fetch(`${h.url}/.well-known/oauth-protected-resource`)).json()).toEqual(prm);
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
      client_id_metadata_document_supported: true,
    });
  });
});
