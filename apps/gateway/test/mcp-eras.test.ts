import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { MemoryProvider } from './mcp-kit.js';
import { consent, rawClient } from './oauth-browser.js';

const TOOL_NAMES = ['list_agents', 'call_agent', 'get_balance', 'get_transactions'];

describe('/mcp serves protocol 2026-07-28 and the 2025 revisions at one URL (the v2 SDK client line)', () => {
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

  const credits = async (): Promise<number> => (await alice.api('/v1/balance')).body.balance_base_units;

  /** The v2 client through the whole OAuth flow (discovery from the 401, registration, PKCE, consent, token), then connected. */
  async function signedIn(name: string, options: ConstructorParameters<typeof Client>[1] = {}) {
    const provider = new MemoryProvider(name);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name, version: '1.0.0' }, options).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    const { redirect } = await consent(h.url, provider.authorizationUrl!, alice);
    // The v2 client checks iss against the issuer it discovered (RFC 9207) before redeeming the code.
    await first.finishAuth(redirect.searchParams);
    const client = new Client({ name, version: '1.0.0' }, options);
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    return { client, provider };
  }

  async function paidCall(client: Client, marker: string) {
    const before = await credits();
    const call = await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { marker } } });
    expect(call.isError).toBeFalsy();
    expect(call.structuredContent).toMatchObject({ service: 'echo', result: { echo: { marker } }, cost: { base_units: 100_000 }, paidWith: 'credit' });
    // The same JSON as text, for clients that read only the text.
    expect(JSON.parse((call.content as Array<{ text: string }>)[0]!.text)).toEqual(call.structuredContent);
    expect(await credits()).toBe(before - 100_000);
  }

  it('pinned to 2026-07-28: server/discover, no handshake, the tools with their schemas and hints, and a paid call', async () => {
    const { client } = await signedIn('modern client', { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect(client.getServerVersion()).toMatchObject({ name: 'farebox', title: 'Farebox' });
    expect(client.getInstructions()).toContain('call_agent');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    for (const name of ['list_agents', 'get_balance', 'get_transactions']) {
      expect(byName[name]!.annotations, name).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    }
    expect(byName.call_agent!.annotations).toMatchObject({
      title: 'Call a paid service',
      readOnlyHint: false,
      destructiveHint: false,
      idempotentHint: false,
      openWorldHint: true,
    });
    for (const t of tools) {
      expect(t.title, t.name).toBeTruthy();
      expect(t.outputSchema?.type, t.name).toBe('object');
      expect(t.icons?.[0], t.name).toMatchObject({ mimeType: 'image/svg+xml', sizes: ['any'] });
      expect(t.icons![0]!.src, t.name).toMatch(/^data:image\/svg\+xml;base64,/);
    }
    expect(byName.call_agent!.outputSchema!.required).toEqual(expect.arrayContaining(['service', 'cost', 'paidWith', 'newBalance']));
    expect(byName.get_balance!.outputSchema!.required).toEqual(expect.arrayContaining(['balance_base_units', 'total_usd']));

    await paidCall(client, 'modern');
    const txs = await client.callTool({ name: 'get_transactions', arguments: {} });
    expect((txs.structuredContent as { transactions: Array<{ type: string; service: string }> }).transactions[0]).toMatchObject({
      type: 'call',
      service: 'echo',
    });
    await client.close();
  });

  it('pinned to each 2025 revision (the initialize handshake): 2025-11-25 through the OAuth flow, then 2025-06-18 and 2025-03-26, the same tools and a paid call each', async () => {
    // Legacy mode offers the first 2025 revision of supportedProtocolVersions at initialize; the server must answer it back.
    const pinned = (version: string) => ({ versionNegotiation: { mode: 'legacy' as const }, supportedProtocolVersions: [version] });
    const { client, provider } = await signedIn('legacy v2 client', pinned('2025-11-25'));
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(tools.every((t) => t.outputSchema && t.icons?.length && t.annotations)).toBe(true);
    await paidCall(client, 'legacy');
    await client.close();
    for (const version of ['2025-06-18', '2025-03-26']) {
      const older = new Client({ name: `client ${version}`, version: '1.0.0' }, pinned(version));
      await older.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
      expect(older.getNegotiatedProtocolVersion(), version).toBe(version);
      expect((await older.listTools()).tools.map((t) => t.name)).toEqual(TOOL_NAMES);
      await paidCall(older, version);
      await older.close();
    }
  });

  it('answers each era as docs/oauth.md says: initialize echoes a revision it serves and counter-offers the newest otherwise; server/discover lists 2026-07-28; an unknown 2026-style version is 400 with the supported list', async () => {
    const { tokens } = await (await rawClient(h.url)).authorize(alice);
    const post = async (body: unknown, headers: Record<string, string> = {}) => {
      const r = await fetch(mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...headers,
        },
        body: JSON.stringify(body),
      });
      const text = await r.text();
      // A 2025 answer is one SSE event; a 2026 answer is JSON.
      const json = r.headers.get('content-type')?.startsWith('text/event-stream') ? /^data: (.*)$/m.exec(text)![1]! : text;
      return { status: r.status, session: r.headers.get('mcp-session-id'), body: JSON.parse(json) };
    };
    const initialize = (protocolVersion: string) =>
      post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    // 2024-11-05 too: the SDK still serves it.
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      const r = await initialize(version);
      expect(r.status, version).toBe(200);
      expect(r.body.result.protocolVersion, version).toBe(version);
      expect(r.session, version).toBeNull();
    }
    expect((await initialize('2023-01-01')).body.result.protocolVersion).toBe('2025-11-25');
    const meta = (v: string) => ({
      'io.modelcontextprotocol/protocolVersion': v,
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    });
    const discover = (v: string) =>
      post({ jsonrpc: '2.0', id: 2, method: 'server/discover', params: { _meta: meta(v) } }, { 'mcp-protocol-version': v, 'mcp-method': 'server/discover' });
    const modern = await discover('2026-07-28');
    expect(modern.status).toBe(200);
    expect(modern.body.result).toMatchObject({ supportedVersions: ['2026-07-28'], resultType: 'complete', capabilities: { tools: {} } });
    expect(modern.body.result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'farebox', title: 'Farebox' });
    const unknown = await discover('2099-01-01');
    expect(unknown.status).toBe(400);
    // Every revision the server serves, both eras (they share the URL), and the one asked for.
    expect(unknown.body.error).toMatchObject({
      code: -32022,
      message: 'Unsupported protocol version: 2099-01-01',
      data: { supported: expect.arrayContaining(['2026-07-28', '2025-11-25']), requested: '2099-01-01' },
    });
  });

  it('answers a token without agents:call calling call_agent with 403 insufficient_scope naming the scope, in both eras, and charges nothing', async () => {
    const c = await rawClient(h.url);
    const { tokens } = await c.authorize(alice, { scope: 'agents:read account:read' });
    const withToken: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${tokens.access_token}`);
      return fetch(input, { ...init, headers });
    };
    const before = await credits();
    const expected = `Bearer error="insufficient_scope", error_description="this connection was not granted the agents:call scope", scope="agents:call", resource_metadata="${h.url}/.well-known/oauth-protected-resource/mcp"`;
    for (const options of [{ versionNegotiation: { mode: { pin: '2026-07-28' } } }, {}] as const) {
      const seen: Array<{ status: number; challenge: string | null }> = [];
      const recording: typeof fetch = async (input, init) => {
        const r = await withToken(input, init);
        seen.push({ status: r.status, challenge: r.headers.get('www-authenticate') });
        return r;
      };
      const client = new Client({ name: 'narrow', version: '1.0.0' }, options);
      await client.connect(new StreamableHTTPClientTransport(mcpUrl, { fetch: recording }));
      // The scopes it has still work.
      expect((await client.listTools()).tools).toHaveLength(4);
      expect((await client.callTool({ name: 'get_balance', arguments: {} })).isError).toBeFalsy();
      await expect(client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: {} } })).rejects.toThrow();
      expect(seen.at(-1)).toEqual({ status: 403, challenge: expected });
      await client.close();
    }
    expect(await credits()).toBe(before);
  });
});
