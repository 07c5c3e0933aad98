import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { credentialReaches, operationList, type CredentialKind, type Operation } from '@farebox/contract';
import { grantOperator } from '@farebox/gateway-core';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

// Controls that bind whoever holds the credential (docs/api.md, "Credentials and
// what each may do", "Idempotent retries", "Payloads arrive as sent"; docs/oauth.md,
// "Calls the user confirms"): a spend key cannot lift its own policy or mint keys,
// a connection's confirmation holds on every door, a replay obeys the credential
// that sends it, and a number that would reach the service changed is refused.

type Answer = { status: number; body: any };
const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const;
type ToolCall = Awaited<ReturnType<Client['callTool']>>;
const meta = (r: ToolCall) => r._meta?.['farebox/error'] as Record<string, any> | undefined;

describe('controls that bind', () => {
  let h: HttpStack;
  const seen: string[] = [];

  beforeAll(async () => {
    h = await startHttpStack();
    await h.publish('echo', '0.0001', (p) => ({ echo: p }));
    await h.publish('word-count', '0.0001', (p) => ({ words: String((p as { text?: string }).text ?? '').split(/\s+/).length }));
    await h.publish('pricey', '0.25', (p) => ({ echo: p }));
    await h.publish('raw-echo', '0.0001', (p) => {
      seen.push(JSON.stringify(p));
      return { ok: true };
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  /** A request with the user's session cookie and CSRF token (as the dashboard makes it). */
  async function session(user: HttpAccount, path: string, init: { method?: string; body?: unknown } = {}): Promise<Answer> {
    const res = await h.fetch(path, {
      method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
      headers: {
        cookie: user.cookie,
        'x-csrf-token': user.csrf,
        origin: h.origin,
        ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
    });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  }
  /** A request with a bearer credential. */
  async function bearer(token: string, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> {
    const res = await h.fetch(path, {
      method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
      headers: { authorization: `Bearer ${token}`, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
      ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
    });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  }
  const credits = async (user: HttpAccount): Promise<number> => (await user.api('/v1/balance')).body.balance_base_units;

  const SPEND_REFUSAL = {
    error:
      'this is a spend key: it may only call services, search the catalog and read its own balance, transactions and policy (GET /v1/me); use a manage key or the dashboard for this',
    code: 'CREDENTIAL_KIND',
  };

  it('a key with a spending policy cannot lift it, mint keys, revoke the owner, top up, publish or loosen a connection; the owner is unaffected', async () => {
    const user = await h.account();
    const created = await session(user, '/v1/api-keys', {
      body: { name: 'agent', limit_usd: 0.01, limit_period: 'day', allowed_services: ['echo'], max_call_usd: 0.001 },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kind: 'spend', limit_usd: 0.01, allowed_services: ['echo'], max_call_usd: 0.001 });
    const agent = created.body.key as string;
    await h.accessToken(user, { fields: { limit_usd: '1' } });
    const [conn] = (await session(user, '/v1/oauth/connections')).body;
    const ownerKey = ((await session(user, '/v1/api-keys')).body as Array<{ id: string; prefix: string }>).find((k) => user.key.startsWith(k.prefix))!;

    const attempts: Array<[string, string, unknown]> = [
      ['PATCH', `/v1/api-keys/${created.body.id}`, { limit_usd: null, limit_period: null, allowed_services: null, max_call_usd: null }],
      ['POST', '/v1/api-keys', { name: 'escape' }],
      ['DELETE', `/v1/api-keys/${ownerKey.id}`, undefined],
      ['POST', '/v1/topup', { amount: 1 }],
      ['POST', '/v1/publisher/activate', { name: 'mallory' }],
      ['PATCH', `/v1/oauth/connections/${conn.id}`, { limit_usd: null, confirm_above_usd: null }],
      ['GET', '/v1/api-keys', undefined],
    ];
    for (const [method, path, body] of attempts) {
      const r = await bearer(agent, path, { method, ...(body === undefined ? {} : { body }) });
      expect({ method, path, ...r }).toEqual({ method, path, status: 403, body: SPEND_REFUSAL });
    }
    // Nothing changed: the key's policy, the connection's, the owner's key, the account.
    const keys = (await session(user, '/v1/api-keys')).body as Array<Record<string, unknown>>;
    expect(keys).toHaveLength(2);
    expect(keys.find((k) => k.id === created.body.id)).toMatchObject({ kind: 'spend', limit_usd: 0.01, allowed_services: ['echo'], max_call_usd: 0.001 });
    expect(keys.find((k) => k.id === ownerKey.id)).toMatchObject({ kind: 'manage', limit_usd: null });
    expect((await session(user, '/v1/oauth/connections')).body[0]).toMatchObject({ id: conn.id, limit_usd: 1, confirm_above_usd: 0.1 });
    expect((await user.api('/v1/me')).body).toMatchObject({ is_publisher: false });
    expect((await user.api('/v1/api-keys')).status).toBe(200);
    // What a spend key may do, it does: its own policy on /v1/me, a call the policy allows; the policy still binds.
    expect((await bearer(agent, '/v1/me')).body.credential).toMatchObject({
      via: 'api_key',
      id: created.body.id,
      policy: { limit_usd: 0.01, allowed_services: ['echo'] },
    });
    expect((await bearer(agent, '/v1/call', { body: { service: 'echo', payload: {} } })).status).toBe(200);
    expect(await bearer(agent, '/v1/call', { body: { service: 'word-count', payload: { text: 'a b' } } })).toMatchObject({
      status: 403,
      body: { error: 'this API key may not call word-count (allowed: echo)', limit_source: 'key' },
    });
  });

  it('kinds of key: a manage key manages, a policy makes a spend key for good, kind manage with a policy is refused', async () => {
    const user = await h.account();
    expect(await session(user, '/v1/api-keys', { body: { name: 'x', kind: 'manage', limit_usd: 1, limit_period: 'day' } })).toEqual({
      status: 400,
      body: { error: 'a key with a spending policy is a spend key: leave kind out or send kind "spend"', code: 'BAD_REQUEST' },
    });
    expect((await session(user, '/v1/api-keys', { body: { name: 'x', kind: 'admin' } })).body).toEqual({
      error: 'kind must be spend or manage',
      code: 'BAD_REQUEST',
    });
    const spendOnly = await session(user, '/v1/api-keys', { body: { name: 'reader', kind: 'spend' } });
    expect(spendOnly.body).toMatchObject({ kind: 'spend', limit_usd: null });
    expect(await bearer(spendOnly.body.key, '/v1/api-keys', { body: { name: 'more' } })).toMatchObject({ status: 403, body: SPEND_REFUSAL });
    // A manage key (the harness's) creates keys; a policy put on a manage key makes it a spend key, also once removed.
    const made = await user.api('/v1/api-keys', { body: { name: 'later' } });
    expect(made.body).toMatchObject({ kind: 'manage' });
    expect((await user.api(`/v1/api-keys/${made.body.id}`, { method: 'PATCH', body: { max_call_usd: 1 } })).body).toMatchObject({ kind: 'spend' });
    expect((await user.api(`/v1/api-keys/${made.body.id}`, { method: 'PATCH', body: { max_call_usd: null } })).body).toMatchObject({
      kind: 'spend',
      max_call_usd: null,
    });
    expect(await bearer(made.body.key, '/v1/api-keys')).toMatchObject({ status: 403, body: SPEND_REFUSAL });
    // The database refuses a policy on a manage key whatever writes it.
    await expect(h.core.db.query(`UPDATE gw_api_keys SET kind = 'manage' WHERE id = $1`, [made.body.id])).resolves.toBeDefined();
    await expect(h.core.db.query(`UPDATE gw_api_keys SET kind = 'manage', max_call_units = 5 WHERE id = $1`, [made.body.id])).rejects.toThrow(
      /gw_api_keys_policy_is_spend/,
    );
  });

  it('every operation with every kind of credential answers as the contract table says', async () => {
    const user = await h.account();
    // An operator, so that the operator operations answer as the table says for the kinds that reach them.
    await grantOperator(h.core.db, user.id, 'cli:test');
    const spend = (await session(user, '/v1/api-keys', { body: { name: 'spend', kind: 'spend' } })).body.key as string;
    const token = await h.accessToken(user);
    const asKind: Record<CredentialKind, (op: Operation, path: string, body: unknown) => Promise<Answer>> = {
      session: (op, path, body) => session(user, path, { method: op.method, ...(body === undefined ? {} : { body }) }),
      manage_key: (op, path, body) => bearer(user.key, path, { method: op.method, ...(body === undefined ? {} : { body }) }),
      spend_key: (op, path, body) => bearer(spend, path, { method: op.method, ...(body === undefined ? {} : { body }) }),
      oauth: (op, path, body) => bearer(token, path, { method: op.method, ...(body === undefined ? {} : { body }) }),
    };
    const OAUTH_REFUSAL = { error: 'not available with an OAuth access token (use the dashboard or an API key)' };
    const rows: string[] = [];
    let walked = 0;
    for (const op of operationList as readonly Operation[]) {
      if (op.auth.kind === 'none') continue;
      // A path parameter nobody has (a 404 or 400 at most, never a change), a body the handler refuses.
      const path = op.path.replace(/:(\w+)/g, 'nobody-has-this');
      const body = op.method === 'GET' || op.method === 'DELETE' ? undefined : {};
      for (const kind of ['session', 'manage_key', 'spend_key', 'oauth'] as const) {
        const r = await asKind[kind](op, path, body);
        walked++;
        const reaches = credentialReaches(op, kind);
        const refusedByKind =
          r.status === 403 && (r.body?.code === 'CREDENTIAL_KIND' || r.body?.error === OAUTH_REFUSAL.error || r.body?.error === 'operator role required');
        if (r.status === 401 || reaches === refusedByKind) rows.push(`${op.id} with ${kind}: ${r.status} ${JSON.stringify(r.body)} (table: ${reaches})`);
        if (!reaches && kind === 'spend_key') expect(r.body).toEqual(SPEND_REFUSAL);
      }
    }
    expect(rows).toEqual([]);
    expect(walked).toBeGreaterThanOrEqual(4 * 30);
    // A spend key reaches only these: calls, the catalog (with each service's health), its own account reads.
    expect((operationList as readonly Operation[]).filter((op) => credentialReaches(op, 'spend_key') && op.auth.kind !== 'none').map((op) => op.id)).toEqual([
      'me',
      'balance',
      'wallet',
      'transactions',
      'listAgents',
      'agentManifest',
      'call',
      'getAgent',
      'agentHealth',
    ]);
    // Nothing the walk sent changed the account.
    expect(await credits(user)).toBe(5 * 10_000_000);
  });

  it('a connection that confirms every paid call: POST /v1/call is refused with the link, approved on the page it is charged once', async () => {
    const user = await h.account();
    const token = await h.accessToken(user, { fields: { confirm_above_usd: '0' } });
    const before = await credits(user);
    const call = (headers: Record<string, string> = {}) => bearer(token, '/v1/call', { body: { service: 'pricey', payload: { n: 1 } }, headers });
    const first = await call();
    expect(first.status).toBe(403);
    const id = first.body.approval_id as string;
    expect(first.body).toMatchObject({
      code: 'CONFIRMATION_REQUIRED',
      service: 'pricey',
      price_usd: 0.25,
      approval_url: `${h.origin}/approve/${id}`,
    });
    expect(first.body.error).toContain(`then send the call again with the header Farebox-Approval: ${id}. Nothing was charged.`);
    // The same token, a key of the account naming the approval, a forged approval: nothing is charged.
    expect((await call({ 'farebox-approval': id })).body.error).toBe(
      `approval ${id} is not approved yet: open ${h.origin}/approve/${id}, approve the call, then call again with approval_id`,
    );
    expect((await call({ 'farebox-approval': 'apr_forged' })).status).toBe(404);
    expect(await credits(user)).toBe(before);

    await approvePage(user, first.body.approval_url);
    const paid = await call({ 'farebox-approval': id });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ result: { echo: { n: 1 } }, cost: { base_units: 2_500_000 } });
    expect((await call({ 'farebox-approval': id })).status).toBe(409);
    expect(await credits(user)).toBe(before - 2_500_000);
    // The account's own API key is the owner's: no confirmation asked.
    expect((await user.api('/v1/call', { body: { service: 'pricey', payload: {} } })).status).toBe(200);
  });

  it('MCP: a client declaring URL mode is sent to the approval page; a form answered by the app itself counts only when the owner opted in', async () => {
    const user = await h.account();
    async function mcp(capabilities: Record<string, unknown>, fields: Record<string, string>, reply: (params: any) => Promise<any>) {
      const token = await h.accessToken(user, { fields: { confirm_above_usd: '0', ...fields } });
      const asked: any[] = [];
      const client = new Client({ name: 'attacker', version: '1.0.0' }, { ...MODERN, capabilities });
      client.setRequestHandler('elicitation/create', async (request) => {
        asked.push(request.params);
        return reply(request.params);
      });
      const withToken: typeof fetch = (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${token}`);
        return h.fetch(input, { ...init, headers });
      };
      await client.connect(new StreamableHTTPClientTransport(new URL(`${h.origin}/mcp`), { fetch: withToken }));
      return { client, asked };
    }
    const callPricey = (client: Client) => client.callTool({ name: 'call_agent', arguments: { service: 'pricey', payload: {} } }) as Promise<ToolCall>;
    const before = await credits(user);

    // A form-only client that answers for the person, on a connection whose owner did not opt in: never asked, never charged.
    const selfAnswer = await mcp({ elicitation: { form: {} } }, {}, async () => ({ action: 'accept', content: { confirm: true } }));
    const refused = await callPricey(selfAnswer.client);
    expect(selfAnswer.asked).toHaveLength(0);
    expect(meta(refused)).toMatchObject({ code: 'CONFIRMATION_REQUIRED', service: 'pricey' });
    expect(await credits(user)).toBe(before);
    await selfAnswer.client.close();

    // URL mode: the client opens the gateway's page; the person approves there; the retried request is charged once.
    let approveOnPage = false;
    const url = await mcp({ elicitation: { url: {}, form: {} } }, {}, async (params) => {
      if (approveOnPage) await approvePage(user, params.url);
      return { action: 'accept' };
    });
    const unapproved = await callPricey(url.client);
    expect(url.asked[0]).toMatchObject({ mode: 'url', url: expect.stringMatching(new RegExp(`^${h.origin}/approve/apr_`)) });
    expect(unapproved.isError).toBe(true);
    expect(meta(unapproved)?.error ?? (unapproved.content as Array<{ text: string }>)[0]!.text).toMatch(/is not approved yet/);
    expect(await credits(user)).toBe(before);
    approveOnPage = true;
    const paid = await callPricey(url.client);
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ service: 'pricey', cost: { base_units: 2_500_000 } });
    expect(await credits(user)).toBe(before - 2_500_000);
    await url.client.close();

    // Opted in on the consent page ("Let this app confirm calls for me"): the app's form answer confirms.
    const optedIn = await mcp({ elicitation: { form: {} } }, { confirm_by_app: 'on' }, async () => ({ action: 'accept', content: { confirm: true } }));
    expect((await callPricey(optedIn.client)).isError).toBeFalsy();
    expect(optedIn.asked[0]).toMatchObject({ mode: 'form' });
    expect(await credits(user)).toBe(before - 5_000_000);
    await optedIn.client.close();
  });

  it('a replay obeys the credential that sends it: another key under the same Idempotency-Key gets its own refusal, not the stored answer', async () => {
    const user = await h.account();
    const wordsOnly = (await user.api('/v1/api-keys', { body: { name: 'words', allowed_services: ['word-count'] } })).body.key as string;
    const cheapOnly = (await user.api('/v1/api-keys', { body: { name: 'cheap', max_call_usd: 0.01 } })).body.key as string;
    const body = { service: 'pricey', payload: { secret: 42 } };
    const headers = { 'idempotency-key': 'replay-1' };
    const first = await user.api('/v1/call', { body, headers });
    expect(first.status).toBe(200);
    expect(await bearer(wordsOnly, '/v1/call', { body, headers })).toMatchObject({
      status: 403,
      body: { error: 'this API key may not call pricey (allowed: word-count)', limit_source: 'key' },
    });
    expect(await bearer(cheapOnly, '/v1/call', { body, headers })).toMatchObject({
      status: 403,
      body: { error: 'this call costs $0.25, over the maximum per call of this API key ($0.01)', limit_source: 'key' },
    });
    // The key that made it, or any key the policy allows, gets the stored answer: charged once.
    const again = await user.api('/v1/call', { body, headers });
    expect(again.body.callId).toBe(first.body.callId);
    expect(await credits(user)).toBe(5 * 10_000_000 - 2_500_000);
  });

  it('a number JSON cannot carry exactly is refused with 400 before anything is held; the others reach the service as sent', async () => {
    const user = await h.account();
    const before = await credits(user);
    for (const [n, token] of [
      ['1e400', '1e400'],
      ['-0', '-0'],
      ['123456789012345678901234567890', '123456789012345678901234567890'],
      ['9007199254740993', '9007199254740993'],
      ['0.10000000000000000001', '0.10000000000000000001'],
      ['1e-400', '1e-400'],
    ] as const) {
      const r = await bearer(user.key, '/v1/call', { body: `{"service":"raw-echo","payload":{"n":${n}}}` });
      expect(r).toEqual({
        status: 400,
        body: {
          error: `the number ${token} cannot be carried exactly: JSON numbers must fit a 64-bit float (no overflow, no -0, no whole number beyond 2^53, no more digits than it keeps); send it as a string`,
          code: 'BAD_REQUEST',
        },
      });
    }
    expect(seen).toEqual([]);
    expect(await credits(user)).toBe(before);
    const ok = await bearer(user.key, '/v1/call', {
      body: '{"service":"raw-echo","payload":{"a":0.1,"b":1e300,"c":9007199254740992,"d":-12.5,"e":"-0 and 1e400 in a string","f":0,"g":[1.5E3,-7]}}',
    });
    expect(ok.status).toBe(200);
    expect(seen).toEqual(['{"a":0.1,"b":1e+300,"c":9007199254740992,"d":-12.5,"e":"-0 and 1e400 in a string","f":0,"g":[1500,-7]}']);
    expect(await credits(user)).toBe(before - 1_000);
  });

  /** The gateway's approval page: the signed-in person opens the link and approves. */
  async function approvePage(user: HttpAccount, url: string) {
    const page = await h.fetch(url, { headers: { cookie: user.cookie } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
    expect(csrf).toBeDefined();
    const post = await h.fetch(url, {
      method: 'POST',
      headers: { cookie: user.cookie, origin: h.origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf!, decision: 'approve' }).toString(),
    });
    expect(post.status).toBe(200);
  }
});
