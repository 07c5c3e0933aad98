import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, startAdapter, type RunningAdapter } from './mcp-adapter.js';
import { browserSignIn, startStack, type Stack, type StackUser } from './stack.js';

type Structured<T> = { structuredContent?: unknown; isError?: boolean; content?: unknown } & { structuredContent?: T };
const sc = <T>(r: unknown) => (r as Structured<T>).structuredContent as T;
const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;
/** A tool error's details (`_meta["farebox/error"]`). */
const errorMeta = (r: unknown) => (r as { _meta: { 'farebox/error': Record<string, unknown> } })._meta['farebox/error'];

const TOOL_NAMES = ['list_agents', 'call_agent', 'get_balance', 'get_transactions'];

describe('farebox-mcp, the stdio adapter, as a subprocess driven by the official MCP SDK client against a real gateway', () => {
  let h: Stack;
  let alice: StackUser;
  let dir: string;
  const adapters: RunningAdapter[] = [];

  async function adapter(env: Record<string, string>, options: Parameters<typeof startAdapter>[1] = {}) {
    const a = await startAdapter({ FAREBOX_URL: h.url, ...env }, options);
    adapters.push(a);
    return a;
  }
  async function credits(user: StackUser): Promise<number> {
    return (await user.api('/v1/balance')).body.balance_base_units;
  }
  async function tokenFile(path: string) {
    return JSON.parse(await readFile(path, 'utf8')) as {
      client: { client_id: string };
      tokens: { access_token: string; refresh_token: string };
      expires_at: number;
    };
  }
  async function refreshTokensIssued(user: StackUser): Promise<number> {
    const me = await user.api('/v1/me');
    const { rows } = await h.gw.core.db.query<{ n: string | number }>(
      `SELECT count(*) AS n FROM gw_oauth_tokens t JOIN gw_oauth_connections c ON c.id = t.connection_id WHERE c.user_id = $1 AND t.kind = 'refresh'`,
      [me.body.id],
    );
    return Number(rows[0]!.n);
  }

  beforeAll(async () => {
    ensureBuilt();
    h = await startStack();
    await h.publish('echo', '0.01');
    await h.publish('pricey', '0.25');
    alice = await h.user();
    dir = await mkdtemp(join(tmpdir(), 'farebox-mcp-test-'));
  }, 180_000);

  afterAll(async () => {
    for (const a of adapters) await a.close().catch(() => undefined);
    await h?.close();
  });

  it('with FAREBOX_API_KEY serves the four tools without any sign-in, and call_agent really pays', async () => {
    const tokenPath = join(dir, 'never-written.json');
    const a = await adapter({ FAREBOX_API_KEY: alice.key, FAREBOX_TOKEN_PATH: tokenPath });
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);

    const listed = await a.client.callTool({ name: 'list_agents', arguments: { query: 'echo' } });
    expect(sc<{ services: Array<{ service: string }> }>(listed).services.map((s) => s.service)).toContain('echo');

    const before = await credits(alice);
    const call = await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { hello: 'stdio' } } });
    expect(call.isError).toBeFalsy();
    expect(sc(call)).toMatchObject({ service: 'echo', result: { echo: { hello: 'stdio' } }, cost: { lamports: 100_000, usd: 0.01 }, paidWith: 'credit' });
    expect(await credits(alice)).toBe(before - 100_000);

    const balance = await a.client.callTool({ name: 'get_balance', arguments: {} });
    expect(sc(balance)).toMatchObject({ balance_base_units: before - 100_000 });
    const txs = await a.client.callTool({ name: 'get_transactions', arguments: {} });
    expect(sc<{ transactions: Array<{ type: string; service: string }> }>(txs).transactions[0]).toMatchObject({ type: 'call', service: 'echo' });

    const unknown = await a.client.callTool({ name: 'call_agent', arguments: { service: 'no-such-service', payload: {} } });
    expect(unknown.isError).toBe(true);
    // The gateway's error, with the id of the request it answered (its logs carry the same id).
    expect(text(unknown)).toMatch(/^service not found \(request id [0-9a-f-]{36}\)$/);
    expect(errorMeta(unknown).requestId).toBe(/request id (\S+)\)/.exec(text(unknown))![1]);
    expect(await credits(alice)).toBe(before - 100_000);

    expect(a.stderr()).not.toMatch(/authorize\?/);
    await expect(stat(tokenPath)).rejects.toThrow(/ENOENT/);
  });

  it("with an API key under a spending policy answers its refusals as tool errors carrying the policy's fields, nothing charged", async () => {
    const made = await alice.api('/v1/api-keys', { body: { name: 'mcp-agent', limit_usd: 0.01, limit_period: 'day', allowed_services: ['echo'] } });
    expect(made.status).toBe(201);
    const a = await adapter({ FAREBOX_API_KEY: made.body.key, FAREBOX_TOKEN_PATH: join(dir, 'never-written-policy.json') });
    const before = await credits(alice);
    // get_balance shows the key's own budget next to the account's money, as /mcp does for a connection.
    expect(sc(await a.client.callTool({ name: 'get_balance', arguments: {} }))).toMatchObject({
      balance_base_units: before,
      spending_policy: { limit_usd: 0.01, limit_period: 'day', allowed_services: ['echo'], spent_usd: 0, remaining_usd: 0.01 },
    });
    const notAllowed = await a.client.callTool({ name: 'call_agent', arguments: { service: 'pricey', payload: {} } });
    expect(notAllowed.isError).toBe(true);
    expect(text(notAllowed)).toMatch(/^this API key may not call pricey \(allowed: echo\) \(request id [0-9a-f-]{36}\)$/);
    expect(errorMeta(notAllowed)).toMatchObject({ status: 403, limit_source: 'key', limit_usd: 0.01, remaining_usd: 0.01, allowed_services: ['echo'] });
    expect((await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: {} } })).isError).toBeFalsy();
    const over = await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: {} } });
    expect(over.isError).toBe(true);
    expect(text(over)).toMatch(/^spending limit reached: this API key may spend \$0\.01 per day \(UTC\); \$0 is left until /);
    expect(errorMeta(over)).toMatchObject({
      status: 402,
      limit_source: 'key',
      limit_usd: 0.01,
      remaining_usd: 0,
      resets_at: expect.stringMatching(/T00:00:00\.000Z$/),
      callId: expect.any(String),
    });
    expect(await credits(alice)).toBe(before - 100_000);
    expect(sc(await a.client.callTool({ name: 'get_balance', arguments: {} }))).toMatchObject({ spending_policy: { spent_usd: 0.01, remaining_usd: 0 } });
  });

  it("with a revoked API key answers every tool with the gateway's error instead of crashing", async () => {
    const bob = await h.user();
    const keys = (await bob.api('/v1/api-keys')).body as Array<{ id: string }>;
    await bob.api(`/v1/api-keys/${keys[0]!.id}`, { method: 'DELETE' });
    const a = await adapter({ FAREBOX_API_KEY: bob.key, FAREBOX_TOKEN_PATH: join(dir, 'bob.json') });
    const r = await a.client.callTool({ name: 'get_balance', arguments: {} });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/^invalid credential \(request id [0-9a-f-]{36}\)$/);
  });

  it('signs in through the browser on first use (URL on stderr, no browser available), stores the token 0600, bridges the same tools to /mcp, and pays', async () => {
    const tokenPath = join(dir, 'nested', 'alice-token.json');
    // PATH without xdg-open/open: opening a browser fails silently, the URL on stderr is enough.
    const a = await adapter({ FAREBOX_TOKEN_PATH: tokenPath, FAREBOX_CLIENT_NAME: 'Claude Desktop (test)', BROWSER: '', PATH: dirname(process.execPath) });
    const listing = a.client.listTools();
    const url = await a.signInUrl();
    expect(new URL(url).searchParams.get('code_challenge_method')).toBe('S256');
    expect(new URL(url).searchParams.get('redirect_uri')).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    const signIn = await browserSignIn(h.url, url, alice);
    expect(signIn.consentHtml).toContain('Claude Desktop (test)');
    expect(signIn.callbackStatus).toBe(200);
    expect(signIn.callbackText).toContain('Connected to Farebox');
    const { tools } = await listing;
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);

    // The tools the adapter serves itself in API-key mode are exactly the gateway's.
    const keyed = await adapter({ FAREBOX_API_KEY: alice.key });
    expect((await keyed.client.listTools()).tools).toEqual(tools);

    const file = await tokenFile(tokenPath);
    expect(file.tokens.access_token).toMatch(/^fbo_at_/);
    expect((await stat(tokenPath)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(tokenPath))).mode & 0o777).toBe(0o700);

    const before = await credits(alice);
    const call = await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { via: 'oauth' } } });
    expect(sc(call)).toMatchObject({ result: { echo: { via: 'oauth' } }, cost: { lamports: 100_000 } });
    expect(await credits(alice)).toBe(before - 100_000);
    expect(sc(await a.client.callTool({ name: 'get_balance', arguments: {} }))).toMatchObject({ balance_base_units: before - 100_000 });
    const txs = await a.client.callTool({ name: 'get_transactions', arguments: {} });
    expect(sc<{ transactions: Array<{ service: string }> }>(txs).transactions[0]).toMatchObject({ service: 'echo' });
    const listed = await a.client.callTool({ name: 'list_agents', arguments: {} });
    expect(sc<{ count: number }>(listed).count).toBeGreaterThanOrEqual(1);

    // A second start reuses the stored token: no sign-in.
    const again = await adapter({ FAREBOX_TOKEN_PATH: tokenPath });
    expect(sc(await again.client.callTool({ name: 'get_balance', arguments: {} }))).toMatchObject({ balance_base_units: before - 100_000 });
    expect(again.stderr()).not.toMatch(/authorize\?/);
  });

  it('refreshes an expired token once even when two adapters need it at the same moment, and re-reads the file the other one wrote', async () => {
    const carol = await h.user();
    const tokenPath = join(dir, 'carol.json');
    const a = await adapter({ FAREBOX_TOKEN_PATH: tokenPath });
    const first = a.client.callTool({ name: 'get_balance', arguments: {} });
    await browserSignIn(h.url, await a.signInUrl(), carol);
    expect((await first).isError).toBeFalsy();
    const b = await adapter({ FAREBOX_TOKEN_PATH: tokenPath });
    expect(await refreshTokensIssued(carol)).toBe(1);

    const old = await tokenFile(tokenPath);
    await writeFile(tokenPath, JSON.stringify({ ...old, expires_at: Date.now() - 1000 }), { mode: 0o600 });
    const [ra, rb] = await Promise.all([a.client.callTool({ name: 'get_balance', arguments: {} }), b.client.callTool({ name: 'get_balance', arguments: {} })]);
    expect(ra.isError).toBeFalsy();
    expect(rb.isError).toBeFalsy();
    const fresh = await tokenFile(tokenPath);
    expect(fresh.tokens.access_token).not.toBe(old.tokens.access_token);
    expect(fresh.tokens.refresh_token).not.toBe(old.tokens.refresh_token);
    expect(fresh.expires_at).toBeGreaterThan(Date.now() + 29 * 24 * 3600 * 1000);
    // One rotation: the second adapter waited for the lock and then used what the first wrote.
    expect(await refreshTokensIssued(carol)).toBe(2);
    expect(a.stderr() + b.stderr()).not.toMatch(/authorize\?[\s\S]*authorize\?/);
  });

  it('signs in again in the middle of a session when the grant was revoked and the refresh fails', async () => {
    const dave = await h.user();
    const tokenPath = join(dir, 'dave.json');
    const a = await adapter({ FAREBOX_TOKEN_PATH: tokenPath });
    const first = a.client.callTool({ name: 'get_balance', arguments: {} });
    await browserSignIn(h.url, await a.signInUrl(), dave);
    expect((await first).isError).toBeFalsy();

    const file = await tokenFile(tokenPath);
    const revoked = await fetch(`${h.url}/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: file.tokens.refresh_token, client_id: file.client.client_id }).toString(),
    });
    expect(revoked.status).toBe(200);

    const offset = a.stderr().length;
    const before = await credits(dave);
    const call = a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { after: 'revoke' } } });
    const url = await a.signInUrl(offset);
    await browserSignIn(h.url, url, dave);
    const result = await call;
    expect(result.isError).toBeFalsy();
    expect(sc(result)).toMatchObject({ result: { echo: { after: 'revoke' } } });
    expect(await credits(dave)).toBe(before - 100_000);
    expect((await tokenFile(tokenPath)).tokens.access_token).not.toBe(file.tokens.access_token);
  });

  it('two adapters started at once sign in once, and both work', async () => {
    const erin = await h.user();
    const tokenPath = join(dir, 'erin.json');
    const [a, b] = await Promise.all([adapter({ FAREBOX_TOKEN_PATH: tokenPath }), adapter({ FAREBOX_TOKEN_PATH: tokenPath })]);
    const lists = Promise.all([a.client.listTools(), b.client.listTools()]);
    const url = await Promise.race([a.signInUrl(), b.signInUrl()]);
    await browserSignIn(h.url, url, erin);
    const [la, lb] = await lists;
    expect(la.tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(lb.tools).toEqual(la.tools);
    const urls = [a.stderr(), b.stderr()].map((s) => (s.match(/authorize\?/g) ?? []).length);
    expect(urls.sort()).toEqual([0, 1]);

    const connections = (await erin.api('/v1/oauth/connections')).body as unknown[];
    expect(connections).toHaveLength(1);
    const before = await credits(erin);
    const [ca, cb] = await Promise.all([
      a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { from: 'a' } } }),
      b.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { from: 'b' } } }),
    ]);
    expect(sc(ca)).toMatchObject({ result: { echo: { from: 'a' } } });
    expect(sc(cb)).toMatchObject({ result: { echo: { from: 'b' } } });
    expect(await credits(erin)).toBe(before - 200_000);
  });

  it('speaks protocol 2026-07-28 on stdio too (v2 client pinned): API-key mode serves the tools and pays', async () => {
    const a = await adapter({ FAREBOX_API_KEY: alice.key, FAREBOX_TOKEN_PATH: join(dir, 'never-written-modern.json') }, { pin: '2026-07-28' });
    expect(a.protocolVersion).toBe('2026-07-28');
    const { tools } = await a.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    expect(tools.every((t) => t.outputSchema && t.annotations && t.icons?.length)).toBe(true);
    const before = await credits(alice);
    const call = await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { era: 'modern-key' } } });
    expect(sc(call)).toMatchObject({ service: 'echo', result: { echo: { era: 'modern-key' } }, cost: { base_units: 100_000 } });
    expect(await credits(alice)).toBe(before - 100_000);
  });

  it("speaks protocol 2026-07-28 on stdio in OAuth mode: signs in, lists the gateway's tools and pays through /mcp", async () => {
    const grace = await h.user();
    const a = await adapter({ FAREBOX_TOKEN_PATH: join(dir, 'grace.json') }, { pin: '2026-07-28' });
    expect(a.protocolVersion).toBe('2026-07-28');
    const listing = a.client.listTools();
    await browserSignIn(h.url, await a.signInUrl(), grace);
    expect((await listing).tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    const before = await credits(grace);
    const call = await a.client.callTool({ name: 'call_agent', arguments: { service: 'echo', payload: { era: 'modern-oauth' } } });
    expect(sc(call)).toMatchObject({ result: { echo: { era: 'modern-oauth' } }, cost: { base_units: 100_000 } });
    expect(await credits(grace)).toBe(before - 100_000);

    // Above the connection's threshold (default: above $0.10), the adapter's client gets the approval link;
    // approved on the dashboard's page, the retry with approval_id is charged once.
    const asked = await a.client.callTool({ name: 'call_agent', arguments: { service: 'pricey', payload: {} } });
    expect(asked.isError).toBe(true);
    const m = errorMeta(asked) as { code: string; approval_id: string; approval_url: string };
    expect(m).toMatchObject({ code: 'CONFIRMATION_REQUIRED', approval_url: `${h.url}/approve/${m.approval_id}` });
    expect(text(asked)).toContain(`open ${m.approval_url} and approve it`);
    expect(await credits(grace)).toBe(before - 100_000);
    const page = await (await fetch(m.approval_url, { headers: { cookie: grace.cookie } })).text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const decided = await fetch(m.approval_url, {
      method: 'POST',
      headers: { cookie: grace.cookie, origin: h.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, decision: 'approve' }).toString(),
    });
    expect(decided.status).toBe(200);
    const paid = await a.client.callTool({ name: 'call_agent', arguments: { service: 'pricey', payload: {}, approval_id: m.approval_id } });
    expect(sc(paid)).toMatchObject({ service: 'pricey', cost: { base_units: 2_500_000 } });
    expect(await credits(grace)).toBe(before - 2_600_000);
  });
});
