import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, InMemoryTransport } from '@modelcontextprotocol/client';
import { createAdapter, loadAdapterConfig, type Adapter } from '@farebox/mcp';
import { browserSignIn, startStack, type Stack, type StackUser } from './stack.js';

// The stdio adapter in OAuth mode (bridging to the gateway's /mcp) makes a
// paid call retry-safe as @farebox/client does: call_agent carries an
// idempotency key (`_meta["farebox/idempotencyKey"]`), a request whose answer
// was lost on the way back is asked once more under the same key, and the
// call is charged once. The loss is the network's: the adapter's fetch lets
// the gateway answer, then throws what undici throws for a closed socket.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const KEY = 'farebox/idempotencyKey';
type ToolAnswer = { isError?: boolean; structuredContent?: Record<string, unknown>; content: Array<{ text: string }>; _meta?: Record<string, unknown> };
const errorMeta = (r: ToolAnswer) => (r._meta?.['farebox/error'] ?? {}) as Record<string, unknown>;

describe('farebox-mcp in OAuth mode: a paid call whose answer is lost', () => {
  let h: Stack;
  let user: StackUser;
  let adapter: Adapter;
  let client: Client;
  /** Answers of tools/call of call_agent to lose, in order. */
  let losses = 0;
  /** The idempotency key of every tools/call of call_agent the adapter sent to /mcp. */
  const keys: Array<unknown> = [];

  const losingFetch: typeof fetch = async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const body = typeof init?.body === 'string' ? init.body : undefined;
    const message =
      body && new URL(url).pathname === '/mcp'
        ? (JSON.parse(body) as { method?: string; params?: { name?: string; _meta?: Record<string, unknown> } })
        : undefined;
    const paid = message?.method === 'tools/call' && message.params?.name === 'call_agent';
    if (paid) keys.push(message.params?._meta?.[KEY]);
    const res = await fetch(input, init);
    if (paid && losses > 0) {
      losses--;
      // The gateway answered (and charged); the answer never reaches the adapter.
      await res.arrayBuffer();
      throw new TypeError('fetch failed', { cause: Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' }) });
    }
    return res;
  };

  const credits = async () => (await user.api('/v1/balance')).body.balance_base_units as number;
  const calls = async () => ((await user.api('/v1/transactions')).body as Array<{ type: string }>).filter((t) => t.type === 'call').length;
  const call = async (payload: Record<string, unknown>, meta?: Record<string, unknown>) =>
    (await client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload }, ...(meta ? { _meta: meta } : {}) })) as ToolAnswer;

  beforeAll(async () => {
    h = await startStack();
    await h.publish('echo', '0.01');
    user = await h.user();
    const dir = await mkdtemp(join(tmpdir(), 'farebox-mcp-retry-'));
    const lines: string[] = [];
    adapter = createAdapter({
      config: loadAdapterConfig({ FAREBOX_URL: h.url, FAREBOX_TOKEN_PATH: join(dir, 'token.json'), BROWSER: 'none' }),
      log: (line) => lines.push(line),
      fetch: losingFetch,
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await adapter.createServer().connect(serverSide);
    client = new Client({ name: 'retry-test', version: '1.0.0' });
    await client.connect(clientSide);
    // First use signs in: the URL is in the adapter's messages; the user consents in the browser.
    const listing = client.listTools();
    let url: string | undefined;
    for (const until = Date.now() + 20_000; !url && Date.now() < until; await new Promise((r) => setTimeout(r, 50)))
      url = lines.join('\n').match(/https?:\/\/\S+\/authorize\?\S+/)?.[0];
    if (!url) throw new Error(`no sign-in URL in the adapter's messages:\n${lines.join('\n')}`);
    await browserSignIn(h.url, url, user);
    await listing;
  }, 180_000);

  afterAll(async () => {
    await client?.close().catch(() => undefined);
    await adapter?.close().catch(() => undefined);
    await h?.close();
  });

  it('sends a fresh random key with every paid call, asks once more under it after a lost answer, and is charged once (callId in the answer)', async () => {
    const before = await credits();
    keys.length = 0;
    const plain = await call({ n: 0 });
    expect(plain.structuredContent).toMatchObject({ result: { echo: { n: 0 } }, callId: expect.any(String) });
    keys.length = 0;
    losses = 1;
    const answer = await call({ n: 1 });
    expect(answer.isError).toBeFalsy();
    expect(answer.structuredContent).toMatchObject({ service: 'echo', result: { echo: { n: 1 } }, cost: { lamports: 100_000 }, callId: expect.any(String) });
    expect(keys).toHaveLength(2);
    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(await credits()).toBe(before - 200_000);
    expect(await calls()).toBe(2);
  });

  it('two lost answers: the tool error names the key; the same key sent by the client answers that call, charged once', async () => {
    const before = await credits();
    const callsBefore = await calls();
    keys.length = 0;
    losses = 2;
    const lost = await call({ n: 2 });
    expect(lost.isError).toBe(true);
    expect(lost.content[0]!.text).toContain('the call was asked twice without an answer: get_transactions shows whether it was charged');
    expect(keys).toHaveLength(2);
    expect(keys[1]).toBe(keys[0]);
    expect(errorMeta(lost)).toMatchObject({ idempotencyKey: keys[0] });
    // It was charged (the gateway answered both times): asked again under the key, the answer is that call's, not a new one.
    const again = await call({ n: 2 }, { [KEY]: keys[0] });
    expect(again.structuredContent).toMatchObject({ result: { echo: { n: 2 } }, callId: expect.any(String) });
    expect(keys[2]).toBe(keys[0]);
    expect(await credits()).toBe(before - 100_000);
    expect(await calls()).toBe(callsBefore + 1);
    // The same key with another request is refused, and names the key.
    const other = await call({ n: 3 }, { [KEY]: keys[0] });
    expect(other.isError).toBe(true);
    expect(errorMeta(other)).toMatchObject({ code: 'CONFLICT', idempotencyKey: keys[0] });
    expect(other.content[0]!.text).toContain('idempotency key reused with a different request');
    expect(await credits()).toBe(before - 100_000);
  });

  it("a failed paid call's tool error names its callId", async () => {
    const failed = (await client.callTool({ name: 'call_agent', arguments: { service: 'nosuchservice', payload: {} } })) as ToolAnswer;
    expect(failed.isError).toBe(true);
    expect(errorMeta(failed)).toMatchObject({ code: 'NOT_FOUND', callId: expect.any(String), idempotencyKey: expect.stringMatching(UUID) });
    expect(failed.content[0]!.text).toBe('service not found');
  });
});
