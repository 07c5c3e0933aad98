import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testClock } from '@farebox/test-kit';
import { GatewayApiError, createGatewayClient } from '@farebox/client';
import { checkResponses, recordResponses } from './contract-kit.js';
import { startHarness, type DbKind, type Harness, type TestUser } from './harness.js';
import { rawClient } from './oauth-browser.js';

// Spending policies on API keys (docs/api.md, "Spending policies"): a limit per
// period reserved in the hold's own statement, allowed services, a maximum
// price per call; refusals with machine-readable fields, nothing charged.

const DAY = 86_400_000;

export function spendingPolicySuite(kind: DbKind) {
  describe(`spending policies of API keys on ${kind}`, () => {
    let h: Harness;
    let alice: TestUser;
    const clock = testClock();

    beforeAll(async () => {
      h = await startHarness(kind, { now: clock.now });
      alice = await h.user();
      await h.publish('echo', { price: '0.01' });
      await h.publish('word-count', { price: '0.01', handler: (p) => ({ words: String((p as { text?: string }).text ?? '').split(/\s+/).length }) });
      await h.publish('broken', {
        price: '0.01',
        handler: () => {
          throw new Error('boom');
        },
      });
    }, 120_000);

    // Every answer the suite gets, checked against the contract at the end.
    const recorder = recordResponses(
      () => h?.url,
      () => expect.getState().currentTestName,
    );

    afterAll(async () => {
      recorder.stop();
      await h?.close();
    });

    /** A new key of `user` with `policy`, made with the session (as the dashboard does). */
    async function keyWith(user: TestUser, policy: Record<string, unknown>) {
      const r = await session(user, '/v1/api-keys', { body: { name: 'agent', ...policy } });
      expect(r.status).toBe(201);
      const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
        user.api(path, { ...init, headers: { authorization: `Bearer ${r.body.key}` } });
      return { created: r.body, api, call: (service: string, payload: unknown = {}) => api('/v1/call', { body: { service, payload } }) };
    }
    /** A request with the user's session cookie (as the dashboard makes it). */
    async function session(user: TestUser, path: string, init: { method?: string; body?: unknown } = {}) {
      const res = await fetch(`${h.url}${path}`, {
        method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
        headers: { cookie: user.cookie, 'x-csrf-token': user.csrf, ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      });
      return { status: res.status, body: (await res.json()) as any };
    }
    const balance = async (user: TestUser) => (await user.api('/v1/balance')).body.balance_base_units as number;
    const nextUtcMidnight = () => new Date(Math.floor(clock.now() / DAY) * DAY + DAY).toISOString();

    it('200 racing calls on a key with a 50-call daily budget pay exactly 50; the rest are 402 with the budget fields, nothing charged', async () => {
      const user = await h.user();
      const k = await keyWith(user, { limit_usd: 0.5, limit_period: 'day' });
      expect(k.created).toMatchObject({ limit_usd: 0.5, limit_period: 'day', spent_usd: 0, remaining_usd: 0.5, resets_at: nextUtcMidnight() });
      const start = await balance(user);
      const results = await Promise.all(Array.from({ length: 200 }, (_, i) => k.call('echo', { i })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(50);
      const refused = results.filter((r) => r.status === 402);
      expect(refused).toHaveLength(150);
      expect(await balance(user)).toBe(start - 50 * 100_000);
      const last = await k.call('echo');
      expect(last.status).toBe(402);
      expect(last.body).toEqual({
        error: `spending limit reached: this API key may spend $0.5 per day (UTC); $0 is left until ${nextUtcMidnight()} and this call costs $0.01`,
        code: 'SPENDING_LIMIT',
        limit_source: 'key',
        limit_usd: 0.5,
        remaining_usd: 0,
        resets_at: nextUtcMidnight(),
        callId: expect.any(String),
      });
      const listed = (await session(user, '/v1/api-keys')).body.find((x: { id: string }) => x.id === k.created.id);
      expect(listed).toMatchObject({ limit_usd: 0.5, spent_usd: 0.5, remaining_usd: 0 });
      // The key reports its own policy and what is left (GET /v1/me).
      expect((await k.api('/v1/me')).body.credential).toEqual({
        via: 'api_key',
        id: k.created.id,
        policy: {
          limit_usd: 0.5,
          limit_period: 'day',
          allowed_services: null,
          max_call_usd: null,
          spent_usd: 0.5,
          remaining_usd: 0,
          resets_at: nextUtcMidnight(),
        },
      });

      // A new UTC day (the gateway's clock; nothing sleeps) starts from the whole limit again.
      clock.advance(DAY);
      expect((await k.api('/v1/me')).body.credential.policy).toMatchObject({ spent_usd: 0, remaining_usd: 0.5, resets_at: nextUtcMidnight() });
      expect((await k.call('echo')).status).toBe(200);
    });

    it('a key limited to echo cannot call word-count, and a price over its per-call maximum is refused: 403, nothing charged', async () => {
      const k = await keyWith(alice, { allowed_services: ['echo'], max_call_usd: '0.005' });
      const start = await balance(alice);
      const wc = await k.call('word-count', { text: 'a b' });
      expect(wc.status).toBe(403);
      expect(wc.body).toEqual({
        error: 'this API key may not call word-count (allowed: echo)',
        code: 'FORBIDDEN',
        limit_source: 'key',
        limit_usd: null,
        remaining_usd: null,
        resets_at: null,
        allowed_services: ['echo'],
        callId: expect.any(String),
      });
      const pricey = await k.call('echo');
      expect(pricey.status).toBe(403);
      expect(pricey.body.error).toBe('this call costs $0.01, over the maximum per call of this API key ($0.005)');
      expect(await balance(alice)).toBe(start);
      // Raised per-call maximum: the next call goes through (the key's cached principal is dropped on update).
      const patched = await session(alice, `/v1/api-keys/${k.created.id}`, { method: 'PATCH', body: { max_call_usd: 0.01 } });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ allowed_services: ['echo'], max_call_usd: 0.01 });
      expect((await k.call('echo')).status).toBe(200);
      // Narrowed to word-count after a call with echo: the next echo call is refused at once, nothing charged.
      const narrowed = await session(alice, `/v1/api-keys/${k.created.id}`, { method: 'PATCH', body: { allowed_services: ['word-count'] } });
      expect(narrowed.body).toMatchObject({ allowed_services: ['word-count'], max_call_usd: 0.01 });
      const afterNarrowing = await balance(alice);
      const echoAgain = await k.call('echo');
      expect(echoAgain.status).toBe(403);
      expect(echoAgain.body).toMatchObject({
        error: 'this API key may not call echo (allowed: word-count)',
        limit_source: 'key',
        allowed_services: ['word-count'],
      });
      expect(await balance(alice)).toBe(afterNarrowing);
      expect((await k.call('word-count', { text: 'a b' })).status).toBe(200);
    });

    it('a refunded call gives its budget back; a lowered limit refuses the next call at once; a total limit has no reset', async () => {
      const k = await keyWith(alice, { limit_usd: 0.03, limit_period: 'week' });
      expect((await k.call('broken')).status).toBe(500);
      expect((await k.api('/v1/me')).body.credential.policy).toMatchObject({ spent_usd: 0, remaining_usd: 0.03 });
      expect((await k.call('echo')).status).toBe(200);
      const lowered = await session(alice, `/v1/api-keys/${k.created.id}`, { method: 'PATCH', body: { limit_usd: 0.01 } });
      expect(lowered.body).toMatchObject({ limit_usd: 0.01, limit_period: 'week', spent_usd: 0.01, remaining_usd: 0 });
      const refused = await k.call('echo');
      expect(refused.status).toBe(402);
      expect(refused.body).toMatchObject({ limit_source: 'key', limit_usd: 0.01, remaining_usd: 0 });
      // The SDK's typed error carries the same fields.
      const client = createGatewayClient({ baseUrl: h.url, apiKey: (k.created as { key: string }).key });
      const err = await client.call('echo', {}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(GatewayApiError);
      expect((err as GatewayApiError).spendingLimit).toMatchObject({ source: 'key', limitUsd: 0.01, remainingUsd: 0 });

      const total = await session(alice, `/v1/api-keys/${k.created.id}`, { method: 'PATCH', body: { limit_usd: 1, limit_period: 'total' } });
      expect(total.body).toMatchObject({ limit_period: 'total', resets_at: null, spent_usd: 0, remaining_usd: 1 });
      const cleared = await session(alice, `/v1/api-keys/${k.created.id}`, { method: 'PATCH', body: { limit_usd: null } });
      expect(cleared.body).toMatchObject({ limit_usd: null, limit_period: null, spent_usd: null, remaining_usd: null });
    });

    it('refuses a malformed policy with its exact message and creates or changes nothing', async () => {
      const before = (await session(alice, '/v1/api-keys')).body.length;
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ limit_usd: 5 }, 'limit_period required with limit_usd (day, week, month or total)'],
        [{ limit_usd: 5, limit_period: 'year' }, 'limit_period must be day, week, month or total'],
        [{ limit_usd: 'lots', limit_period: 'day' }, 'limit_usd must be a USD amount such as 5 or 2.50'],
        [{ limit_usd: 0, limit_period: 'day' }, 'limit_usd must be more than 0 and at most 10000 USD'],
        [{ max_call_usd: 20000 }, 'max_call_usd must be more than 0 and at most 10000 USD'],
        [{ allowed_services: 'echo' }, 'allowed_services must be a list of service names'],
        [{ allowed_services: ['Echo!'] }, 'invalid service name: use 1 to 32 lower-case letters'],
      ];
      for (const [policy, message] of cases) {
        const r = await session(alice, '/v1/api-keys', { body: { name: 'bad', ...policy } });
        expect({ status: r.status, error: r.body.error }).toEqual({ status: 400, error: expect.stringContaining(message) });
      }
      expect((await session(alice, '/v1/api-keys')).body).toHaveLength(before);
      expect((await session(alice, '/v1/api-keys/key_unknown', { method: 'PATCH', body: { limit_usd: 1, limit_period: 'day' } })).status).toBe(404);
    });

    it("an OAuth connection's policy: set on the connection (PATCH), enforced on its token's calls with limit_source connection", async () => {
      const bob = await h.user();
      const c = await rawClient(h.url);
      const { tokens } = await c.authorize(bob, { dailyLimitUsd: '1' });
      const [conn] = (await session(bob, '/v1/oauth/connections')).body;
      expect(conn).toMatchObject({ limit_usd: 1, limit_period: 'day', daily_limit_usd: 1, allowed_services: null });
      const patched = await session(bob, `/v1/oauth/connections/${conn.id}`, {
        method: 'PATCH',
        // No confirmation asked (none by price, none as the limit runs low): this test is about the policy alone.
        body: { limit_usd: 0.01, limit_period: 'month', allowed_services: ['echo'], confirm_above_usd: null, confirm_below_left_percent: 0 },
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({ limit_usd: 0.01, limit_period: 'month', daily_limit_usd: null, allowed_services: ['echo'], remaining_usd: 0.01 });
      const call = (service: string) => bob.api('/v1/call', { body: { service, payload: {} }, headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect((await call('word-count')).body).toMatchObject({ error: 'this connection may not call word-count (allowed: echo)', limit_source: 'connection' });
      expect((await call('echo')).status).toBe(200);
      const over = await call('echo');
      expect(over.status).toBe(402);
      expect(over.body).toMatchObject({ limit_source: 'connection', limit_usd: 0.01, remaining_usd: 0 });
      // The connection's token reads its own policy and what is left (GET /v1/me).
      const me = await bob.api('/v1/me', { headers: { authorization: `Bearer ${tokens.access_token}` } });
      expect(me.body.credential).toEqual({
        via: 'oauth',
        id: conn.id,
        policy: {
          limit_usd: 0.01,
          limit_period: 'month',
          allowed_services: ['echo'],
          max_call_usd: null,
          spent_usd: 0.01,
          remaining_usd: 0,
          resets_at: expect.stringMatching(/^\d{4}-\d{2}-01T00:00:00\.000Z$/),
        },
      });
      expect((await session(bob, '/v1/oauth/connections/conn_unknown', { method: 'PATCH', body: {} })).status).toBe(404);
    });

    it('answers every /v1 request of this suite as its operation declares, against the served OpenAPI document', async () => {
      const doc = await (await fetch(`${h.url}/openapi.json`)).json();
      const report = await checkResponses(
        doc,
        recorder.responses.filter((r) => !r.path.startsWith('/openapi.json')),
      );
      expect(report.violations).toEqual([]);
      const ops = new Set([...report.checked].map((c) => c.split(' ')[0]));
      for (const id of ['createApiKey', 'updateApiKey', 'listApiKeys', 'updateOAuthConnection', 'call', 'me']) expect(ops, id).toContain(id);
    });
  });
}
