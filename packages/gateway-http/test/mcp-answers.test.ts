import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

/**
 * What `/mcp` answers a client that got something wrong, as JSON-RPC numbers
 * it (a stock SDK reports the code and message it reads), and what the
 * operator's log shows of it: a client's mistake is an `info` line without a
 * stack, never an `ERROR`.
 */
describe('/mcp answers every mistake as a JSON-RPC error with the spec’s code', () => {
  let h: HttpStack;
  let alice: HttpAccount;
  let full: string;
  let readOnly: string;

  beforeAll(async () => {
    h = await startHttpStack({ logLevel: 'info' });
    alice = await h.account();
    full = await h.accessToken(alice, { scope: 'agents:read agents:call account:read', fields: { confirm_above_usd: '', confirm_below_left_percent: '0' } });
    // Another app (a connection of its own) with the read scope only.
    readOnly = await h.accessToken(alice, { scope: 'agents:read' });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  const MODERN = '2026-07-28';
  const envelope = (version = MODERN) => ({
    'io.modelcontextprotocol/protocolVersion': version,
    'io.modelcontextprotocol/clientInfo': { name: 'probe', version: '1.0.0' },
    'io.modelcontextprotocol/clientCapabilities': {},
  });

  async function post(body: string | object, headers: Record<string, string> = {}, token = full) {
    const res = await h.fetch('/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: any;
    try {
      // A 2025 request's answer may be one SSE event: its data is the message.
      const sse = text.match(/^data: (.*)$/m);
      json = JSON.parse(sse ? sse[1]! : text);
    } catch {
      json = { raw: text };
    }
    return { status: res.status, json, headers: res.headers };
  }

  const errorLines = () => h.logs().filter((l) => /"level":(50|"error")/.test(l));

  it('invalid JSON is -32700 (parse error)', async () => {
    const r = await post('{"jsonrpc": "2.0", "id": 1, "method": ', { 'mcp-protocol-version': '2025-11-25' });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });

  it('a JSON value that is no JSON-RPC message is -32600 (invalid request)', async () => {
    const r = await post({ hello: 'world' }, { 'mcp-protocol-version': '2025-11-25' });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
  });

  it('an unknown method is -32601 in both eras', async () => {
    const modern = await post(
      { jsonrpc: '2.0', id: 7, method: 'no/such', params: { _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'no/such' },
    );
    expect(modern.json).toMatchObject({ jsonrpc: '2.0', id: 7, error: { code: -32601 } });
    const legacy = await post({ jsonrpc: '2.0', id: 8, method: 'no/such', params: {} }, { 'mcp-protocol-version': '2025-11-25' });
    expect(legacy.json).toMatchObject({ jsonrpc: '2.0', id: 8, error: { code: -32601 } });
  });

  it('an unknown revision is -32022 with the supported ones, whichever era the request looks like', async () => {
    for (const version of ['2024-01-01', '2025-01-01', '2099-12-31', 'banana']) {
      const legacy = await post({ jsonrpc: '2.0', id: 9, method: 'tools/list', params: {} }, { 'mcp-protocol-version': version });
      expect(legacy.status, version).toBe(400);
      expect(legacy.json, version).toMatchObject({ jsonrpc: '2.0', error: { code: -32022, data: { requested: version } } });
      expect(legacy.json.error.data.supported, version).toEqual(expect.arrayContaining([MODERN, '2025-11-25']));
      const modern = await post(
        { jsonrpc: '2.0', id: 10, method: 'tools/list', params: { _meta: envelope(version) } },
        { 'mcp-protocol-version': version, 'mcp-method': 'tools/list' },
      );
      expect(modern.status, version).toBe(400);
      expect(modern.json, version).toMatchObject({ jsonrpc: '2.0', error: { code: -32022 } });
    }
  });

  it('a tool beyond the token’s scope is 403 insufficient_scope with a JSON-RPC error body naming the scope', async () => {
    const r = await post(
      { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'get_balance', arguments: {}, _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'get_balance' },
      readOnly,
    );
    expect(r.status).toBe(403);
    expect(r.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
    expect(r.headers.get('www-authenticate')).toMatch(/scope="account:read"/);
    expect(r.json).toMatchObject({ jsonrpc: '2.0', id: 11, error: { code: expect.any(Number), message: expect.stringContaining('account:read') } });
  });

  /** A 2026-07-28 tools/call of `name` with `args`: its result. */
  async function tool(name: string, args: Record<string, unknown>, meta: Record<string, unknown> = {}) {
    const r = await post(
      { jsonrpc: '2.0', id: 20, method: 'tools/call', params: { name, arguments: args, _meta: { ...envelope(), ...meta } } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': name },
    );
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    return r.json.result as { structuredContent: Record<string, any>; isError?: boolean; _meta?: Record<string, any> };
  }

  it('does not advertise tools.listChanged, which it never sends (the tool list cannot change)', async () => {
    const r = await post(
      { jsonrpc: '2.0', id: 30, method: 'server/discover', params: { _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'server/discover' },
    );
    expect(r.json.result.capabilities.tools).toBeDefined();
    expect(r.json.result.capabilities.tools.listChanged).not.toBe(true);
  });

  it('list_agents pages the catalog with a cursor: every service once, newest first, and a cursor of another query is refused', async () => {
    for (const n of [1, 2, 3, 4, 5]) await h.registerRaw(`page-${n}`, `http://127.0.0.1:9/${n}`, '0.001');
    const everything = (await alice.api('/v1/agents')).body as Array<{ service: string }>;
    expect(everything.length).toBeGreaterThanOrEqual(5);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = (await tool('list_agents', { limit: 2, ...(cursor ? { cursor } : {}) })).structuredContent;
      expect(page.count).toBe(page.services.length);
      expect(page.services.length).toBeLessThanOrEqual(2);
      seen.push(...page.services.map((x: { service: string }) => x.service));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < 20);
    // The same services in the same order as REST's GET /v1/agents, each once.
    expect(seen).toEqual(everything.map((x) => x.service));
    expect(pages).toBe(Math.ceil(everything.length / 2));

    const first = (await tool('list_agents', { limit: 2 })).structuredContent;
    const other = await tool('list_agents', { query: 'page', cursor: first.nextCursor });
    expect(other.isError).toBe(true);
    expect(other._meta?.['farebox/error']).toEqual({
      error: 'invalid cursor: it continues another query; pass the same query as the first page',
      code: 'BAD_REQUEST',
    });
    const junk = await tool('list_agents', { cursor: 'not-a-cursor' });
    expect(junk._meta?.['farebox/error']).toMatchObject({ code: 'BAD_REQUEST', error: expect.stringMatching(/^invalid cursor/) });
  });

  it('get_transactions rows carry the call’s callId and the idempotency key it was made under', async () => {
    await h.publish('keyed-echo', '0.001');
    const key = 'mcp-key-7f3a';
    const call = await tool('call_agent', { service: 'keyed-echo', payload: { hi: 1 } }, { 'farebox/idempotencyKey': key });
    expect(call.isError).toBeFalsy();
    const { callId } = call.structuredContent;
    expect(callId).toMatch(/^call_/);
    const rows = (await tool('get_transactions', {})).structuredContent.transactions as Array<Record<string, unknown>>;
    expect(rows.find((r) => r.callId === callId)).toMatchObject({ type: 'call', service: 'keyed-echo', status: 'completed', callId, idempotencyKey: key });
    // The REST list says the same, and a top-up row has neither.
    const rest = (await alice.api('/v1/transactions')).body as Array<Record<string, unknown>>;
    expect(rest.find((r) => r.callId === callId)).toMatchObject({ idempotencyKey: key });
    expect(rest.find((r) => r.type === 'topup')).toMatchObject({ callId: null, idempotencyKey: null });
  });

  it('none of these client mistakes is logged as an error or with a stack', async () => {
    const lines = h.logs().filter((l) => l.includes('mcp'));
    expect(errorLines()).toEqual([]);
    expect(lines.filter((l) => l.includes('"stack"'))).toEqual([]);
  });
});
