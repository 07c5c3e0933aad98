import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runFarebox } from './cli.js';
import { ensureBuilt, type RunningAdapter, startAdapter } from './mcp-adapter.js';
import { publishDownService, startStack, type Stack, type StackUser } from './stack.js';

// Issue 35, item 5: a paid call the service fails says what happened to the
// money, with the exact amount, wherever a newcomer makes it: REST, the stdio
// MCP adapter (farebox-mcp with an API key) and the CLI; each with the
// gateway's request id, and the credits untouched. (The gateway's /mcp:
// apps/gateway/test/mcp-oauth.test.ts; the dashboard: dashboard-layout.test.ts.)
describe('a failed paid call says the charge was refunded, in every client', () => {
  let h: Stack;
  let alice: StackUser;
  let adapter: RunningAdapter | undefined;
  const REFUNDED = 'service unreachable: connection refused (ECONNREFUSED); the 0.001 USD charge was refunded to your credits';
  const escaped = REFUNDED.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const credits = async () => (await alice.api('/v1/balance')).body.balance_base_units as number;

  beforeAll(async () => {
    ensureBuilt();
    h = await startStack();
    alice = await h.user();
    // A service whose endpoint refuses connections.
    await publishDownService(h);
  }, 240_000);

  afterAll(async () => {
    await adapter?.close().catch(() => undefined);
    await h?.close();
  });

  it('REST: the 500 says so in error, with the call id and the refund step', async () => {
    const before = await credits();
    const res = await fetch(`${h.url}/v1/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ service: 'down', payload: {} }),
    });
    expect(res.status).toBe(500);
    const body = (await res.json()) as { error: string; callId: string };
    expect(body.error).toBe(REFUNDED);
    expect(body.callId).toEqual(expect.any(String));
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await credits()).toBe(before);
  });

  it('farebox-mcp: the tool error says so, with the request id, and marks the call refunded', async () => {
    const before = await credits();
    adapter = await startAdapter({ FAREBOX_URL: h.url, FAREBOX_API_KEY: alice.key });
    const down = await adapter.client.callTool({ name: 'call_agent', arguments: { service: 'down', payload: {} } });
    expect(down.isError).toBe(true);
    const said = (down.content as Array<{ text: string }>)[0]!.text;
    expect(said).toMatch(new RegExp(`^${escaped} \\(request id [0-9a-f-]{36}\\)$`));
    expect((down._meta as Record<string, Record<string, unknown>>)['farebox/error']).toMatchObject({ status: 500, refunded: true, callId: expect.any(String) });
    expect(await credits()).toBe(before);
  });

  it('farebox call: the error line says so, with the status and the request id', async () => {
    const before = await credits();
    const r = await runFarebox(['call', 'down', '{}'], {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: tmpdir(),
        FAREBOX_CONFIG_DIR: join(tmpdir(), `farebox-money-${process.pid}`),
        FAREBOX_URL: h.url,
        FAREBOX_API_KEY: alice.key,
      },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^farebox: ${escaped} \\(HTTP 500, request id [0-9a-f-]{36}\\)\\n$`));
    expect(await credits()).toBe(before);
  });
});
