import { closedPort } from '@farebox/test-kit';
import { openDatabase } from '@farebox/ledger';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../src/auth/accounts.js';
import { DATABASE_UNAVAILABLE_MESSAGE } from '../src/db-errors.js';
import { GatewayError } from '../src/errors.js';
import { registerGatewayMcpTools, type McpToolDeps } from '../src/mcp/tools.js';

// What the gateway's /mcp tools answer when the database cannot be reached
// inside a tool (after the request was authenticated): the 503's meaning as
// a tool error ('database unavailable; nothing was charged, retry in a few
// seconds', code UNAVAILABLE, retryAfterSeconds), never the driver's bare
// message; and a call_agent runs under the tools/call's idempotency key.

type Handler = (args: unknown, ctx: unknown) => Promise<{ isError?: boolean; content: Array<{ text: string }>; _meta?: Record<string, unknown> }>;

function tools(deps: McpToolDeps) {
  const handlers = new Map<string, Handler>();
  const principal = { user: { id: 'u1' }, via: 'api_key', credentialId: 'k1' } as unknown as Principal;
  registerGatewayMcpTools({ registerTool: (name, _config, handler) => handlers.set(name, handler as Handler) }, deps, principal);
  return (name: string, args: unknown, meta?: Record<string, unknown>) => handlers.get(name)!(args, { mcpReq: { _meta: meta } });
}

describe('/mcp tools and the database', () => {
  it('a database that cannot be reached is the 503 meaning with Retry-After seconds, for a read and for a paid call', async () => {
    const port = await closedPort();
    // The driver's own failure: what the ledger's queries throw while PostgreSQL is gone.
    const unreachable = () =>
      openDatabase({ url: `postgres://postgres@127.0.0.1:${port}/test` }).then(() => {
        throw new Error('connected to a closed port');
      });
    const call = tools({
      catalog: { list: async () => [] },
      calls: { call: unreachable },
      account: { balance: unreachable, transactions: unreachable },
    });
    for (const [name, args] of [
      ['get_balance', {}],
      ['get_transactions', {}],
      ['call_agent', { service: 'echo', payload: {} }],
    ] as const) {
      const r = await call(name, args);
      expect(r.isError, name).toBe(true);
      expect(r.content[0]!.text, name).toBe(DATABASE_UNAVAILABLE_MESSAGE);
      expect(r._meta?.['farebox/error'], name).toMatchObject({ code: 'UNAVAILABLE', dependency: 'database', retryAfterSeconds: 5 });
    }
  });

  it("runs call_agent under _meta['farebox/idempotencyKey'], refuses a bad one, and names an attempt in progress with its Retry-After", async () => {
    const seen: Array<string | undefined> = [];
    const call = tools({
      catalog: { list: async () => [] },
      calls: {
        call: async (_p, _body, opts) => {
          seen.push(opts?.idempotencyKey);
          throw new GatewayError('CONFLICT', 'a request with this idempotency key is still in progress', undefined, { 'Retry-After': '7' });
        },
      },
      account: { balance: async () => ({}), transactions: async () => [] },
    });
    const r = await call('call_agent', { service: 'echo', payload: {} }, { 'farebox/idempotencyKey': 'key-1' });
    expect(seen).toEqual(['key-1']);
    expect(r._meta?.['farebox/error']).toEqual({ error: 'a request with this idempotency key is still in progress', code: 'CONFLICT', retryAfterSeconds: 7 });
    await call('call_agent', { service: 'echo', payload: {} });
    expect(seen).toEqual(['key-1', undefined]);
    const bad = await call('call_agent', { service: 'echo', payload: {} }, { 'farebox/idempotencyKey': 'x'.repeat(256) });
    expect(bad.content[0]!.text).toBe('invalid _meta["farebox/idempotencyKey"] (1 to 255 characters)');
    expect(seen).toHaveLength(2);
  });
});
