import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createGatewayClient, GatewayApiError } from '@farebox/client';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

// Paid calls the user confirms (docs/oauth.md, "Calls the user confirms"): through MCP
// elicitation (2026-07-28: input_required, answered by the retried request), or with
// a dashboard link and the retry's approval_id. Nothing is charged until the user agrees.

const MODERN = { versionNegotiation: { mode: { pin: '2026-07-28' } } } as const;
/** The consent page's box: the owner lets the app confirm calls for them. */
const APP_CONFIRMS = { confirm_by_app: 'on' };
type Reply = { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean> };
type ToolCall = Awaited<ReturnType<Client['callTool']>>;
const meta = (r: ToolCall) => r._meta?.['farebox/error'] as Record<string, any> | undefined;
const text = (r: ToolCall) => (r.content as Array<{ text: string }>)[0]!.text;

describe('call_agent above the connection threshold asks the user first', () => {
  let h: Harness;
  let alice: TestUser;
  let t = Date.now();
  let failing = false;

  beforeAll(async () => {
    h = await startHarness('pglite', { now: () => t });
    alice = await h.user();
    await h.publish('pricey', { price: '0.25' });
    await h.publish('cheap', { price: '0.01' });
    await h.publish('flaky', {
      price: '0.25',
      handler: (payload) => {
        if (failing) throw new Error('flaky is down');
        return { echo: payload };
      },
    });
  }, 120_000);

  afterAll(async () => {
    await h?.close();
  });

  const credits = async (): Promise<number> => (await alice.api('/v1/balance')).body.balance_base_units;

  /** An OAuth connection (consent with `opts`), and an MCP client of `options` on its token that answers elicitations with `reply`. */
  async function connect(options: ConstructorParameters<typeof Client>[1], opts: Parameters<Awaited<ReturnType<typeof rawClient>>['authorize']>[1] = {}) {
    const c = await rawClient(h.url);
    const { tokens } = await c.authorize(alice, opts);
    const withToken: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${tokens.access_token}`);
      return fetch(input, { ...init, headers });
    };
    const asked: Array<{ message: string; requestedSchema: unknown }> = [];
    const state: { reply: Reply } = { reply: { action: 'cancel' } };
    const client = new Client({ name: 'confirming client', version: '1.0.0' }, options);
    if (options?.capabilities?.elicitation) {
      client.setRequestHandler('elicitation/create', async (request) => {
        const p = request.params as { message: string; requestedSchema: unknown };
        asked.push({ message: p.message, requestedSchema: p.requestedSchema });
        return state.reply;
      });
    }
    await client.connect(new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { fetch: withToken }));
    return { client, asked, state, clientId: c.client.client_id };
  }

  const callPricey = (client: Client, extra: Record<string, unknown> = {}) =>
    client.callTool({ name: 'call_agent', arguments: { service: 'pricey', payload: { n: 1 }, ...extra } }) as Promise<ToolCall>;

  it('2026-07-28 with elicitation: accept charges once; decline and cancel charge nothing; the ledger and get_transactions agree', async () => {
    // The owner lets this app confirm for them (the consent page's box): form-mode elicitation counts.
    const { client, asked, state } = await connect({ ...MODERN, capabilities: { elicitation: { form: {} } } }, { dailyLimitUsd: '5', fields: APP_CONFIRMS });
    const before = await credits();

    state.reply = { action: 'decline' };
    const declined = await callPricey(client);
    expect(declined.isError).toBe(true);
    expect(text(declined)).toBe('the user declined the call of pricey: nothing was charged');
    expect(meta(declined)).toMatchObject({ code: 'CONFIRMATION_DECLINED', service: 'pricey' });
    expect(asked[0]!.message).toBe('Pay $0.25 from your Farebox credits to call pricey? This app has $5 left of its $5 limit (per UTC day).');
    expect(asked[0]!.requestedSchema).toMatchObject({ type: 'object', properties: { confirm: { type: 'boolean' } }, required: ['confirm'] });
    expect(await credits()).toBe(before);

    state.reply = { action: 'cancel' };
    const cancelled = await callPricey(client);
    expect(text(cancelled)).toBe('the user cancelled the confirmation of pricey: nothing was charged');
    expect(meta(cancelled)?.code).toBe('CONFIRMATION_CANCELLED');
    // An accept without the box ticked is no confirmation.
    state.reply = { action: 'accept', content: { confirm: false } };
    const unticked = await callPricey(client);
    expect(meta(unticked)?.code).toBe('CONFIRMATION_NOT_GIVEN');
    expect(await credits()).toBe(before);

    state.reply = { action: 'accept', content: { confirm: true } };
    const accepted = await callPricey(client);
    expect(accepted.isError).toBeFalsy();
    expect(accepted.structuredContent).toMatchObject({ service: 'pricey', result: { echo: { n: 1 } }, cost: { base_units: 2_500_000 } });
    expect(asked).toHaveLength(4);
    expect(asked[3]!.message).toContain('This app has $5 left');
    expect(await credits()).toBe(before - 2_500_000);

    // A call under the threshold is not asked about.
    const cheap = (await client.callTool({ name: 'call_agent', arguments: { service: 'cheap', payload: {} } })) as ToolCall;
    expect(cheap.isError).toBeFalsy();
    expect(asked).toHaveLength(4);
    expect(await credits()).toBe(before - 2_600_000);

    const txs = (await client.callTool({ name: 'get_transactions', arguments: {} })) as ToolCall;
    const calls = (txs.structuredContent as { transactions: Array<{ type: string; service: string; amount_base_units: number }> }).transactions.filter(
      (x) => x.type === 'call',
    );
    expect(calls.map((x) => x.service)).toEqual(['cheap', 'pricey']);
    expect(calls.reduce((sum, x) => sum + Math.abs(x.amount_base_units), 0)).toBe(before - (await credits()));
    // The ledger: the REST history has the same calls (the refusals left none), and its journal verifies.
    const rest = ((await alice.api('/v1/transactions')).body as Array<{ type: string; service: string; amount_base_units: number }>).filter(
      (x) => x.type === 'call',
    );
    expect(rest.slice(0, 2)).toEqual(calls);
    expect((await h.gw.core.ledger.verify()).ok).toBe(true);
    await client.close();
  });

  it('a client that cannot be asked (2026-07-28 without elicitation, or a 2025 handshake) gets a link; approved on the dashboard, the retry with approval_id is charged once', async () => {
    for (const options of [MODERN, { capabilities: { elicitation: { form: {} } } }] as const) {
      const { client, asked } = await connect(options);
      const before = await credits();
      const first = await callPricey(client);
      expect(first.isError).toBe(true);
      const m = meta(first)!;
      expect(m).toMatchObject({ code: 'CONFIRMATION_REQUIRED', service: 'pricey', price_usd: 0.25, approval_url: `${h.url}/approve/${m.approval_id}` });
      expect(text(first)).toContain(`open ${m.approval_url} and approve it`);
      expect(asked).toHaveLength(0);
      // Not approved yet: the retry is refused and charges nothing.
      expect(text(await callPricey(client, { approval_id: m.approval_id }))).toBe(
        `approval ${m.approval_id} is not approved yet: open ${m.approval_url}, approve the call, then call again with approval_id`,
      );
      expect(await credits()).toBe(before);

      await approve(m.approval_url, 'approve');
      const paid = await callPricey(client, { approval_id: m.approval_id });
      expect(paid.isError).toBeFalsy();
      expect(paid.structuredContent).toMatchObject({ service: 'pricey', cost: { base_units: 2_500_000 } });
      expect(await credits()).toBe(before - 2_500_000);
      // Single use.
      const again = await callPricey(client, { approval_id: m.approval_id });
      expect(text(again)).toBe(`approval ${m.approval_id} was already used: an approval pays for one call; call again without approval_id`);
      // Bound to the service.
      expect(text((await client.callTool({ name: 'call_agent', arguments: { service: 'cheap', payload: {}, approval_id: m.approval_id } })) as ToolCall)).toBe(
        `approval ${m.approval_id} is for the service pricey, not cheap`,
      );
      expect(await credits()).toBe(before - 2_500_000);
      await client.close();
    }
  });

  it("the connections' API shows and changes the threshold; bad input is refused with its message and changes nothing", async () => {
    const { client, asked, clientId } = await connect(MODERN, { dailyLimitUsd: '5' });
    const conns = async () => ((await alice.api('/v1/oauth/connections')).body as Array<Record<string, any>>).filter((c) => c.client_id === clientId);
    const conn = (await conns())[0]!;
    expect(conn).toMatchObject({ confirm_above_usd: 0.1, confirm_below_left_percent: 10, limit_usd: 5, limit_period: 'day' });
    const patch = (body: unknown) => alice.api(`/v1/oauth/connections/${conn.id}`, { method: 'PATCH', body });
    for (const [body, error] of [
      [{ confirm_above_usd: 'lots' }, 'confirm_above_usd must be a USD amount such as 0.10, or empty for no threshold'],
      [{ confirm_above_usd: 10001 }, 'confirm_above_usd must be between 0 and 10000 USD'],
      [{ confirm_below_left_percent: 101 }, 'confirm_below_left_percent must be a whole number from 0 to 100'],
      [{ confirm_below_left_percent: 2.5, limit_usd: 9, limit_period: 'day' }, 'confirm_below_left_percent must be a whole number from 0 to 100'],
      [{ confirm_above_usd: 1, limit_usd: 'x' }, 'limit_usd must be a USD amount such as 5 or 2.50'],
      [{ confirm_above_usd: 1, colour: 'red' }, 'unknown field: colour'],
    ] as const) {
      expect(await patch(body)).toMatchObject({ status: 400, body: { error } });
    }
    expect((await conns())[0]).toMatchObject({ confirm_above_usd: 0.1, confirm_below_left_percent: 10, limit_usd: 5 });
    expect((await alice.api('/v1/oauth/connections/conn_unknown', { method: 'PATCH', body: { confirm_above_usd: 1 } })).status).toBe(404);

    // Raised to $1: the $0.25 call runs without asking; the policy is kept.
    const raised = await patch({ confirm_above_usd: '1', confirm_below_left_percent: 0 });
    expect(raised).toMatchObject({ status: 200, body: { id: conn.id, confirm_above_usd: 1, confirm_below_left_percent: 0, limit_usd: 5 } });
    const before = await credits();
    const ran = await callPricey(client);
    expect(ran.isError).toBeFalsy();
    expect(await credits()).toBe(before - 2_500_000);
    // The policy alone: the threshold is kept and shown. Then every paid call asks (0), and "" means never by price.
    expect((await patch({ limit_usd: 6, limit_period: 'day' })).body).toMatchObject({ limit_usd: 6, confirm_above_usd: 1, confirm_below_left_percent: 0 });
    expect((await patch({ confirm_above_usd: 0 })).body.confirm_above_usd).toBe(0);
    expect(meta((await client.callTool({ name: 'call_agent', arguments: { service: 'cheap', payload: {} } })) as ToolCall)?.code).toBe('CONFIRMATION_REQUIRED');
    expect((await patch({ confirm_above_usd: '' })).body.confirm_above_usd).toBeNull();
    expect((await callPricey(client)).isError).toBeFalsy();
    expect(asked).toHaveLength(0);
    expect(await credits()).toBe(before - 5_000_000);

    // @farebox/client: oauthConnections.update and list carry the threshold; a refusal is a GatewayApiError with the message.
    const api = createGatewayClient({ baseUrl: h.url, apiKey: alice.key });
    expect(await api.oauthConnections.update(conn.id, { confirm_above_usd: 0.5, confirm_below_left_percent: 20 })).toMatchObject({
      id: conn.id,
      confirm_above_usd: 0.5,
      confirm_below_left_percent: 20,
    });
    expect((await api.oauthConnections.list()).find((c) => c.id === conn.id)).toMatchObject({ confirm_above_usd: 0.5, confirm_below_left_percent: 20 });
    const refused = await api.oauthConnections.update(conn.id, { confirm_below_left_percent: '-3' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayApiError);
    expect((refused as GatewayApiError).message).toContain('confirm_below_left_percent must be a whole number from 0 to 100');
    expect((await conns())[0]).toMatchObject({ confirm_above_usd: 0.5, confirm_below_left_percent: 20 });
    await client.close();
  });

  it('a confirmed call the service fails is refunded and its approval pays for one retry', async () => {
    const { client } = await connect(MODERN);
    const callFlaky = (extra: Record<string, unknown> = {}) =>
      client.callTool({ name: 'call_agent', arguments: { service: 'flaky', payload: { n: 2 }, ...extra } }) as Promise<ToolCall>;
    const before = await credits();
    const first = meta(await callFlaky())!;
    await approve(first.approval_url, 'approve', alice, 'flaky');
    failing = true;
    const failed = await callFlaky({ approval_id: first.approval_id });
    expect(failed.isError).toBe(true);
    expect(text(failed)).toContain(
      `(refunded; the approval pays for one retry: call call_agent again with the same service and approval_id "${first.approval_id}")`,
    );
    expect(meta(failed)).toMatchObject({ refunded: true, approval_id: first.approval_id });
    // The retry fails too: refunded, and the approval is not given back a second time.
    const again = await callFlaky({ approval_id: first.approval_id });
    expect(meta(again)).toMatchObject({ refunded: true });
    expect(text(again)).not.toContain('pays for one retry');
    expect(text(await callFlaky({ approval_id: first.approval_id }))).toBe(
      `approval ${first.approval_id} was already used: an approval pays for one call; call again without approval_id`,
    );
    expect(await credits()).toBe(before);

    // Failed once, the retry succeeds and is charged once.
    const second = meta(await callFlaky())!;
    await approve(second.approval_url, 'approve', alice, 'flaky');
    expect(meta(await callFlaky({ approval_id: second.approval_id }))?.approval_id).toBe(second.approval_id);
    failing = false;
    const paid = await callFlaky({ approval_id: second.approval_id });
    expect(paid.isError).toBeFalsy();
    expect(paid.structuredContent).toMatchObject({ service: 'flaky', cost: { base_units: 2_500_000 } });
    expect(text(await callFlaky({ approval_id: second.approval_id }))).toMatch(/was already used/);
    expect(await credits()).toBe(before - 2_500_000);
    await client.close();

    // Elicited and accepted, then failed: the model retries with the approval_id, without asking the user again.
    const e = await connect({ ...MODERN, capabilities: { elicitation: { form: {} } } }, { fields: APP_CONFIRMS });
    e.state.reply = { action: 'accept', content: { confirm: true } };
    failing = true;
    const elicited = (await e.client.callTool({ name: 'call_agent', arguments: { service: 'flaky', payload: {} } })) as ToolCall;
    const id = meta(elicited)!.approval_id as string;
    expect(id).toMatch(/^apr_/);
    failing = false;
    const retried = (await e.client.callTool({ name: 'call_agent', arguments: { service: 'flaky', payload: {}, approval_id: id } })) as ToolCall;
    expect(retried.isError).toBeFalsy();
    expect(e.asked).toHaveLength(1);
    expect(await credits()).toBe(before - 5_000_000);
    await e.client.close();
  });

  /** The dashboard's approval page: the signed-in user opens the link and posts the form with its CSRF token. */
  async function approve(url: string, decision: 'approve' | 'deny', user = alice, service = 'pricey') {
    const page = await fetch(url, { headers: { cookie: user.cookie } });
    const html = await page.text();
    if (page.status === 200) expect(html).toContain(`<strong>${service}</strong> for <strong>$0.25</strong>`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
    // A page without the form (decided or expired) is the answer.
    if (page.status !== 200 || !csrf) return { status: page.status, html };
    const post = await fetch(url, {
      method: 'POST',
      headers: { cookie: user.cookie, origin: h.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, decision }).toString(),
    });
    return { status: post.status, html: await post.text() };
  }

  it('an approval expires (the gateway clock), a denied one never pays, and only its owner sees it, with a CSRF token', async () => {
    const { client } = await connect(MODERN);
    const before = await credits();
    const late = meta(await callPricey(client))!;
    expect((await approve(late.approval_url, 'approve')).status).toBe(200);
    t += 11 * 60_000;
    const expired = await callPricey(client, { approval_id: late.approval_id });
    expect(text(expired)).toMatch(new RegExp(`^approval ${late.approval_id} expired at .+: call again without approval_id for a new one$`));

    const denied = meta(await callPricey(client))!;
    // Without the CSRF token, or from another origin, nothing is decided.
    const noCsrf = await fetch(denied.approval_url, {
      method: 'POST',
      headers: { cookie: alice.cookie, origin: h.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'decision=approve',
    });
    expect(noCsrf.status).toBe(403);
    const bob = await h.user();
    expect((await approve(denied.approval_url, 'approve', bob)).status).toBe(404);
    const d = await approve(denied.approval_url, 'deny');
    expect(d.html).toContain('<h1>Denied</h1>');
    expect(text(await callPricey(client, { approval_id: denied.approval_id }))).toBe(
      `the call was denied (approval ${denied.approval_id}): nothing was charged`,
    );
    // An approval expires unapproved too.
    const stale = meta(await callPricey(client))!;
    t += 11 * 60_000;
    expect((await approve(stale.approval_url, 'approve')).html).toContain('<h1>This call expired</h1>');
    expect(text(await callPricey(client, { approval_id: stale.approval_id }))).toMatch(/^approval apr_\S+ expired at /);
    expect(await credits()).toBe(before);
    await client.close();
  });

  it('the consent page sets the threshold; a call that would leave less than 10 % of the limit asks too', async () => {
    const page = await fetch((await rawClient(h.url)).authorizeUrl({ code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' }), {
      headers: { cookie: alice.cookie },
    });
    expect(await page.text()).toContain('name="confirm_above_usd" inputmode="decimal" placeholder="never" value="0.1"');
    // No threshold by price, a limit of $0.27: $0.25 would leave $0.02, under 10 % ($0.027).
    const { client, asked, state } = await connect(
      { ...MODERN, capabilities: { elicitation: { form: {} } } },
      { dailyLimitUsd: '0.27', fields: { confirm_above_usd: '', ...APP_CONFIRMS } },
    );
    const before = await credits();
    state.reply = { action: 'decline' };
    expect(meta(await callPricey(client))?.code).toBe('CONFIRMATION_DECLINED');
    expect(asked[0]!.message).toContain('This app has $0.27 left of its $0.27 limit');
    // $0.01 leaves plenty: not asked.
    expect(((await client.callTool({ name: 'call_agent', arguments: { service: 'cheap', payload: {} } })) as ToolCall).isError).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(await credits()).toBe(before - 100_000);
    // An invalid threshold shows the consent page again with the message, and grants nothing.
    const c = await rawClient(h.url);
    await expect(c.authorize(alice, { fields: { confirm_above_usd: 'lots' } })).rejects.toThrow('consent post answered 400');
    await client.close();
  });
});
