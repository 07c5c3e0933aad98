import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

/**
 * What `/mcp` answers a client that got something wrong, as JSON-RPC numbers
 * it (a stock SDK reports the code and message it reads), and what the
 * operator's log shows of it: a client's mistake is an `info` line without a
 * stack, never an `ERROR`.
 */
describe('/mcp answers every mistake as a JSON-RPC error with the spec’s code', () => {
  let h: Harness;
  let alice: TestUser;
  let full: string;
  let readOnly: string;

  beforeAll(async () => {
    h = await startHarness('pglite');
    alice = await h.user();
    const oauth = await rawClient(h.url);
    full = (await oauth.authorize(alice)).tokens.access_token;
    readOnly = (await oauth.authorize(alice, { scope: 'agents:read' })).tokens.access_token;
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
    const res = await fetch(`${h.url}/mcp`, {
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
    const modern = await post({ jsonrpc: '2.0', id: 7, method: 'no/such', params: { _meta: envelope() } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'no/such' });
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

  it('none of these client mistakes is logged as an error or with a stack', async () => {
    const lines = h.logs().filter((l) => l.includes('mcp'));
    expect(errorLines()).toEqual([]);
    expect(lines.filter((l) => l.includes('"stack"'))).toEqual([]);
  });
});
