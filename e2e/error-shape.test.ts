import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayClient, GatewayApiError } from '@farebox/client';
import { ensureBuilt as ensureCliBuilt, runFarebox } from './cli.js';
import { ensureBuilt as ensureAdapterBuilt, startAdapter, type RunningAdapter } from './mcp-adapter.js';
import { browserSignIn, startStack, type Stack, type StackUser } from './stack.js';

/** What each surface adds of its own (HTTP status, request id, the retry key, the CLI's camel-case policy summary): not part of the answer. */
const TRANSPORT = new Set(['status', 'requestId', 'idempotencyKey', 'spendingLimit']);

/** An answer without the transport's additions, its call id (each attempt is a call of its own) only marked as present. */
function answerOf(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (!TRANSPORT.has(k)) out[k] = k === 'callId' ? typeof v : v;
  return out;
}

const toolError = (r: unknown) => (r as { isError?: boolean; _meta: Record<string, Record<string, unknown>> })._meta['farebox/error']!;

describe('one failure, one answer: an unknown service as REST, /mcp, the stdio adapter (both modes), the CLI and @farebox/client tell it', () => {
  let h: Stack;
  let alice: StackUser;
  const adapters: RunningAdapter[] = [];

  beforeAll(async () => {
    ensureCliBuilt();
    ensureAdapterBuilt();
    h = await startStack();
    alice = await h.user();
  }, 180_000);

  afterAll(async () => {
    for (const a of adapters) await a.close().catch(() => undefined);
    await h?.close();
  });

  it('every surface carries the same { error, code, ... } fields, only the transport’s own additions added', async () => {
    const call = { service: 'no-such-service', payload: {} };

    // REST.
    const res = await fetch(`${h.url}/v1/call`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(call),
    });
    expect(res.status).toBe(404);
    const rest = (await res.json()) as Record<string, unknown>;
    expect(rest).toMatchObject({ error: 'service not found', code: 'NOT_FOUND' });

    // @farebox/client.
    const err = await createGatewayClient({ baseUrl: h.url, apiKey: alice.key })
      .call(call.service, call.payload)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayApiError);
    const client = (err as GatewayApiError).answer;

    // The CLI's --json.
    const cli = await runFarebox(['call', call.service, '{}', '--json'], {
      env: { FAREBOX_URL: h.url, FAREBOX_API_KEY: alice.key, HOME: await mkdtemp(join(tmpdir(), 'fb-home-')) },
    });
    expect(cli.code).toBe(1);
    const cliAnswer = JSON.parse(cli.stderr) as Record<string, unknown>;
    expect(cliAnswer).toMatchObject({ status: 404, requestId: expect.any(String) });

    // The adapter with an API key (its tools over REST).
    const keyed = await startAdapter({ FAREBOX_URL: h.url, FAREBOX_API_KEY: alice.key });
    adapters.push(keyed);
    const keyedResult = await keyed.client.callTool({ name: 'call_agent', arguments: call });
    expect(keyedResult.isError).toBe(true);
    const keyedAnswer = toolError(keyedResult);
    expect(keyedAnswer).toMatchObject({ status: 404, requestId: expect.any(String) });

    // The adapter signed in (its tools are /mcp's), and /mcp itself with the same token.
    const tokenPath = join(await mkdtemp(join(tmpdir(), 'fb-token-')), 'token.json');
    const oauth = await startAdapter({ FAREBOX_URL: h.url, FAREBOX_TOKEN_PATH: tokenPath, BROWSER: '', PATH: process.env.PATH ?? '' });
    adapters.push(oauth);
    const pending = oauth.client.callTool({ name: 'call_agent', arguments: call });
    await browserSignIn(h.url, await oauth.signInUrl(), alice);
    const oauthResult = await pending;
    expect(oauthResult.isError).toBe(true);
    const oauthAnswer = toolError(oauthResult);

    const token = (JSON.parse(await readFile(tokenPath, 'utf8')) as { tokens: { access_token: string } }).tokens.access_token;
    const mcpRes = await fetch(`${h.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'call_agent',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'call_agent',
          arguments: call,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      }),
    });
    const mcp = toolError(((await mcpRes.json()) as { result: unknown }).result);

    const expected = answerOf(rest);
    expect(expected).toMatchObject({ error: 'service not found', code: 'NOT_FOUND' });
    expect(answerOf(mcp)).toEqual(expected);
    expect(answerOf(client)).toEqual(expected);
    expect(answerOf(cliAnswer)).toEqual(expected);
    expect(answerOf(keyedAnswer)).toEqual(expected);
    // OAuth mode adds the idempotency key of the paid call it sent (a transport addition), nothing else.
    expect(answerOf(oauthAnswer)).toEqual(expected);
    // The text a model reads is the same message (the adapter's API-key mode names the request too).
    expect((keyedResult.content as Array<{ text: string }>)[0]!.text).toMatch(/^service not found \(request id [0-9a-f-]{36}\)$/);
  }, 120_000);
});
