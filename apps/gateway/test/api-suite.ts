import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponses, recordResponses } from './contract-kit.js';
import { startHarness, type DbKind, type Harness, type TestUser } from './harness.js';

async function rawServer(
  handler: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void,
): Promise<{ url: string; server: Server; hits: () => number }> {
  let hits = 0;
  const server = createServer((req, res) => {
    hits++;
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server, hits: () => hits };
}

/** The /v1 suite; runs against PGlite (npm test) and the real PostgreSQL server (test:services). */
export function apiSuite(kind: DbKind) {
  let h: Harness;
  let alice: TestUser;
  const servers: Server[] = [];
  // Every response the suite gets from the gateway is kept for the contract check at the end.
  const recorder = recordResponses(
    () => h?.url,
    () => expect.getState().currentTestName,
  );

  beforeAll(async () => {
    h = await startHarness(kind);
    alice = await h.user();
    await h.publish('echo', { price: '0.01' });
  }, 120_000);

  afterAll(async () => {
    recorder.stop();
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
    await h?.close();
  });

  async function credits(u: TestUser): Promise<number> {
    const r = await u.api('/v1/balance');
    return r.body.balance_base_units;
  }

  describe('accounts', () => {
    it('gives a new account the 5 USD sign-up credit once, a custodial wallet, and the spec fields with their legacy twins', async () => {
      const me = await alice.api('/v1/me');
      expect(me.status).toBe(200);
      expect(me.body).toMatchObject({ id: alice.id, email: alice.email, is_publisher: false, publisher_name: null });
      expect(me.body.custodial_wallet).toMatch(/^G[A-Z2-7]{55}$/);
      const b = await alice.api('/v1/balance');
      expect(b.body).toMatchObject({
        asset: 'USDC',
        base_unit_name: 'stroops',
        balance_base_units: 50_000_000,
        balance_lamports: 50_000_000,
        balance_sol: 50_000_000,
        balance_usd: 5,
        total_base_units: 50_000_000,
        total_sol: 50_000_000,
      });
      // The spec's Versioning rule 2: every legacy *_lamports and *_sol twin carries the base units of its *_base_units field.
      const w = await alice.api('/v1/wallet');
      expect(w.body).toMatchObject({ base_units: 0, lamports: 0, sol: 0, asset_amount: 0 });
      for (const body of [b.body, me.body, w.body]) {
        for (const [key, value] of Object.entries(body)) {
          const twin = /^(?:(.*)_)?(lamports|sol)$/.exec(key);
          if (twin) expect([key, value]).toEqual([key, body[twin[1] === undefined ? 'base_units' : `${twin[1]}_base_units`]]);
        }
      }
      // Signing in again does not give a second credit.
      const login = await fetch(`${h.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: alice.email, password: 'correct horse battery' }),
      });
      expect(login.status).toBe(200);
      expect(await credits(alice)).toBe(50_000_000);
    });

    it('refuses a duplicate e-mail and a wrong password without telling which accounts exist', async () => {
      const dup = await fetch(`${h.url}/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: alice.email.toUpperCase(), password: 'another password' }),
      });
      expect(dup.status).toBe(409);
      const wrong = await fetch(`${h.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: alice.email, password: 'nope nope nope' }),
      });
      const unknown = await fetch(`${h.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'nobody@example.com', password: 'nope nope nope' }),
      });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(await wrong.json()).toEqual(await unknown.json());
    });

    it('sets an HttpOnly SameSite=Lax session cookie, and redirects form sign-ins only to local paths', async () => {
      const form = await fetch(`${h.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: alice.email, password: 'correct horse battery', next: '//evil.example/phish' }).toString(),
        redirect: 'manual',
      });
      expect(form.status).toBe(303);
      expect(form.headers.get('location')).toBe('/');
      const cookies = form.headers.getSetCookie();
      const session = cookies.find((c) => c.startsWith('farebox_session='))!;
      expect(session).toMatch(/HttpOnly/);
      expect(session).toMatch(/SameSite=Lax/);
      const local = await fetch(`${h.url}/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ email: alice.email, password: 'correct horse battery', next: '/billing?x=1' }).toString(),
        redirect: 'manual',
      });
      expect(local.headers.get('location')).toBe('/billing?x=1');
    });

    it('needs the CSRF token for cookie-authenticated writes, and refuses cross-origin ones', async () => {
      const noToken = await fetch(`${h.url}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: alice.cookie },
        body: JSON.stringify({ name: 'x' }),
      });
      expect(noToken.status).toBe(403);
      expect(await noToken.json()).toEqual({ error: 'missing or invalid CSRF token', code: 'CSRF' });
      const crossOrigin = await fetch(`${h.url}/v1/api-keys`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: alice.cookie, 'x-csrf-token': alice.csrf, origin: 'https://evil.example' },
        body: JSON.stringify({ name: 'x' }),
      });
      expect(crossOrigin.status).toBe(403);
      const read = await fetch(`${h.url}/v1/me`, { headers: { cookie: alice.cookie } });
      expect(read.status).toBe(200);
    });

    it('answers 401 without a credential or with a bad one, on every /v1 endpoint', async () => {
      for (const path of ['/v1/me', '/v1/balance', '/v1/wallet', '/v1/agents', '/v1/transactions', '/v1/api-keys', '/v1/publisher/overview']) {
        const none = await fetch(`${h.url}${path}`);
        expect(none.status, path).toBe(401);
        const bad = await fetch(`${h.url}${path}`, { headers: { authorization: 'Bearer sk_live_nottherightkey' } });
        expect(bad.status, path).toBe(401);
        expect(await bad.json()).toEqual({ error: 'invalid credential', code: 'UNAUTHENTICATED' });
      }
    });

    it('signs out and the session stops working', async () => {
      const bob = await h.user();
      const out = await fetch(`${h.url}/auth/logout`, { method: 'POST', headers: { cookie: bob.cookie, 'x-csrf-token': bob.csrf } });
      expect(out.status).toBe(200);
      const after = await fetch(`${h.url}/v1/me`, { headers: { cookie: bob.cookie } });
      expect(after.status).toBe(401);
    });
  });

  describe('top-ups', () => {
    it.each([
      ['0', 0],
      ['-1', -1],
      ['1000.01', 1000.01],
      ['a string that is not a number', 'ten'],
      ['more than 7 decimals', 0.00000001],
      ['a missing amount', undefined],
      ['a numeric string (amount is a JSON number)', '5'],
    ])('refuses %s with the spec message and changes nothing', async (_label, amount) => {
      const before = await credits(alice);
      const r = await alice.api('/v1/topup', { body: amount === undefined ? {} : { amount } });
      expect(r.status).toBe(400);
      expect(r.body).toEqual({ error: 'invalid amount (must be 0 < n <= 1000)', code: 'BAD_REQUEST' });
      expect(await credits(alice)).toBe(before);
    });

    it('adds credits and returns the new balance; past the 10,000 USD cap it refuses and changes nothing', async () => {
      const u = await h.user();
      const r = await u.api('/v1/topup', { body: { amount: 1000 } });
      expect(r.status).toBe(200);
      expect(r.body.balance_usd).toBe(1005);
      for (let i = 0; i < 8; i++) expect((await u.api('/v1/topup', { body: { amount: 1000 } })).status).toBe(200);
      expect(await credits(u)).toBe(90_050_000_000);
      const over = await u.api('/v1/topup', { body: { amount: 995.0000001 } });
      expect(over.status).toBe(400);
      expect(over.body).toEqual({ error: 'balance cap exceeded (max $10000)', code: 'BAD_REQUEST' });
      expect(await credits(u)).toBe(90_050_000_000);
      expect((await u.api('/v1/topup', { body: { amount: 995 } })).status).toBe(200);
      expect(await credits(u)).toBe(100_000_000_000);
    });

    it('refuses unknown fields', async () => {
      const r = await alice.api('/v1/topup', { body: { amount: 1, bonus: 100 } });
      expect(r.status).toBe(400);
      expect(r.body.error).toBe('unknown field: bonus');
    });
  });

  describe('API keys', () => {
    it('creates a key shown once, lists it without the secret, and revokes it', async () => {
      const created = await alice.api('/v1/api-keys', { body: { name: 'ci' } });
      expect(created.status).toBe(201);
      expect(created.body.key).toMatch(/^sk_live_[0-9A-Za-z]{49}$/);
      const list = await alice.api('/v1/api-keys');
      const row = list.body.find((k: { id: string }) => k.id === created.body.id);
      // No spending policy: the policy fields are null (docs/api.md, "Spending policies").
      const noPolicy = {
        limit_usd: null,
        limit_period: null,
        allowed_services: null,
        max_call_usd: null,
        spent_usd: null,
        remaining_usd: null,
        resets_at: null,
      };
      expect(row).toEqual({
        id: created.body.id,
        name: 'ci',
        prefix: created.body.key.slice(0, 14),
        // Without a policy or a kind asked for, a manage key (docs/api.md, "Credentials and what each may do").
        kind: 'manage',
        created_at: expect.any(String),
        last_used_at: null,
        ...noPolicy,
      });
      expect(JSON.stringify(list.body)).not.toContain(created.body.key);
      const withKey = await fetch(`${h.url}/v1/me`, { headers: { authorization: `Bearer ${created.body.key}` } });
      expect(withKey.status).toBe(200);
      const del = await alice.api(`/v1/api-keys/${created.body.id}`, { method: 'DELETE' });
      expect(del.status).toBe(200);
      const revoked = await fetch(`${h.url}/v1/me`, { headers: { authorization: `Bearer ${created.body.key}` } });
      expect(revoked.status).toBe(401);
    });

    it('refuses a missing name and a 65-character name', async () => {
      expect(await alice.api('/v1/api-keys', { body: {} })).toMatchObject({ status: 400, body: { error: 'name required' } });
      expect(await alice.api('/v1/api-keys', { body: { name: 'x'.repeat(65) } })).toMatchObject({ status: 400, body: { error: 'name too long (max 64)' } });
      expect((await alice.api('/v1/api-keys', { body: { name: 'x'.repeat(64) } })).status).toBe(201);
    });

    it('gives 404 for an unknown key and an unknown OAuth connection', async () => {
      expect(await alice.api('/v1/api-keys/key_doesnotexist', { method: 'DELETE' })).toMatchObject({ status: 404, body: { error: 'api key not found' } });
      expect(await alice.api('/v1/oauth/connections/conn_doesnotexist', { method: 'DELETE' })).toMatchObject({
        status: 404,
        body: { error: 'connection not found' },
      });
    });

    it("cannot revoke another account's key", async () => {
      const bob = await h.user();
      const bobKeys = await bob.api('/v1/api-keys');
      const id = bobKeys.body[0].id;
      expect((await alice.api(`/v1/api-keys/${id}`, { method: 'DELETE' })).status).toBe(404);
      expect((await bob.api('/v1/me')).status).toBe(200);
    });
  });

  describe('calls', () => {
    it('debits the registry price, calls the service with a certificate it verifies, and returns the result, cost, balance and trace', async () => {
      const u = await h.user();
      const r = await u.api('/v1/call', { body: { service: 'echo', payload: { text: 'hi' } } });
      expect(r.status).toBe(200);
      expect(r.body.result).toEqual({ echo: { text: 'hi' } });
      expect(r.body.cost).toEqual({ lamports: 100_000, base_units: 100_000, usd: 0.01 });
      expect(r.body.paidWith).toBe('credit');
      expect(r.body.mode).toBe('platform-signed');
      expect(r.body.newBalance).toEqual({ lamports: 49_900_000, base_units: 49_900_000, usd: 4.99 });
      const names = r.body.trace.steps.map((s: { name: string }) => s.name);
      expect(names).toEqual(['resolve_service', 'hold_credits', 'call_service', 'post_payment']);
      for (const s of r.body.trace.steps) expect(s).toMatchObject({ status: 'ok', startedAt: expect.any(String), durationMs: expect.any(Number) });
      const tx = await u.api('/v1/transactions');
      expect(tx.body[0]).toMatchObject({ type: 'call', service: 'echo', amount_lamports: 100_000, status: 'completed' });
      expect(tx.body.at(-1)).toMatchObject({ type: 'topup', amount_lamports: 50_000_000, note: 'signup' });
    });

    it('gives 400 "service required" and the unknown-field message before charging anything', async () => {
      const before = await credits(alice);
      expect(await alice.api('/v1/call', { body: { payload: {} } })).toMatchObject({ status: 400, body: { error: 'service required' } });
      const extra = await alice.api('/v1/call', { body: { service: 'echo', payload: {}, price: 0 } });
      expect(extra.status).toBe(400);
      expect(extra.body.error).toMatch(/^unknown field: price/);
      expect((await alice.api('/v1/call', { body: { service: 'echo', payload: [1] } })).status).toBe(400);
      // No payload is not an empty one: refused, nothing sent, nothing charged.
      expect(await alice.api('/v1/call', { body: { service: 'echo' } })).toMatchObject({
        status: 400,
        body: { error: "payload required (a JSON object: the service's input, {} for none)" },
      });
      expect((await alice.api('/v1/call', { body: '{"service":' })).status).toBe(400);
      expect(await credits(alice)).toBe(before);
    });

    it('gives 404 for a service that is not in the registry', async () => {
      expect(await alice.api('/v1/call', { body: { service: 'nope', payload: {} } })).toMatchObject({ status: 404, body: { error: 'service not found' } });
    });

    it('says "insufficient balance" when credits do not cover the price, and charges nothing', async () => {
      await h.publish('pricey', { price: '6' });
      const u = await h.user();
      const r = await u.api('/v1/call', { body: { service: 'pricey', payload: {} } });
      expect(r.body).toEqual({ error: 'insufficient balance', code: 'INSUFFICIENT_BALANCE', callId: expect.stringMatching(/^call_/) });
      expect(r.status).toBe(402);
      expect(await credits(u)).toBe(50_000_000);
    });

    it('runs 200 parallel calls on an account that can afford 50: exactly 50 succeed and the journal matches the balance', async () => {
      await h.publish('tenth', { price: '0.1' });
      const u = await h.user();
      const results = await Promise.all(Array.from({ length: 200 }, () => u.api('/v1/call', { body: { service: 'tenth', payload: {} } })));
      const ok = results.filter((r) => r.status === 200);
      expect(ok).toHaveLength(50);
      expect([...new Set(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${r.body.error}`))]).toEqual(['402 insufficient balance']);
      expect(await credits(u)).toBe(0);
      const report = await h.gw.core.ledger.verify();
      expect(report.ok).toBe(true);
    });

    it.each([
      [
        'the service answers 500',
        (_req: unknown, res: import('node:http').ServerResponse) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":"boom"}'),
        'service error 500: boom',
      ],
      [
        'the service answers invalid JSON',
        (_req: unknown, res: import('node:http').ServerResponse) => res.writeHead(200, { 'content-type': 'application/json' }).end('{not json'),
        'service returned invalid JSON',
      ],
      ['the service never answers', () => undefined, 'service timed out after 4000 ms'],
      [
        'the service trickles its answer past the deadline, a byte a second',
        (_req: unknown, res: import('node:http').ServerResponse) => {
          res.writeHead(200, { 'content-type': 'application/json' }).write('{"a":');
          const drip = setInterval(() => res.write(' '), 1000);
          res.on('close', () => clearInterval(drip));
        },
        'service timed out after 4000 ms',
      ],
      [
        'the service answers more than 5 MiB',
        (_req: unknown, res: import('node:http').ServerResponse) =>
          res.writeHead(200, { 'content-type': 'application/json' }).end(`{"a":"${'x'.repeat(5 * 1024 * 1024)}"}`),
        'service response too large',
      ],
      [
        'the service answers 401',
        (_req: unknown, res: import('node:http').ServerResponse) =>
          res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"invalid certificate signature"}'),
        'service error 401: invalid certificate signature',
      ],
    ])('refunds exactly once when %s, and says so', async (_label, handler, message) => {
      const srv = await rawServer(handler as never);
      servers.push(srv.server);
      const name = `f${Math.random().toString(36).slice(2, 10)}`;
      await h.registerRaw(name, srv.url, '0.5');
      const u = await h.user();
      const r = await u.api('/v1/call', { body: { service: name, payload: {} } });
      expect(r.status).toBe(500);
      // The spec's message first, then what happened to the money.
      expect(r.body.error).toBe(`${message}; the 0.5 USD charge was refunded to your credits`);
      expect(r.body.trace.steps.map((s: { name: string }) => s.name)).toContain('refund');
      expect(await credits(u)).toBe(50_000_000);
      const tx = await u.api('/v1/transactions');
      expect(tx.body[0]).toMatchObject({ type: 'call', service: name, status: 'refunded' });
      expect((await h.gw.core.ledger.verify()).ok).toBe(true);
    });

    it("forwards the service's JSON as the service sent it: a 20-digit number keeps every digit", async () => {
      const answer = '{"id":12345678901234567890,"text":"caf\\u00e9"}';
      const srv = await rawServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(answer));
      servers.push(srv.server);
      const name = `j${Math.random().toString(36).slice(2, 10)}`;
      await h.registerRaw(name, srv.url, '0.5');
      const u = await h.user();
      const res = await fetch(`${h.url}/v1/call`, {
        method: 'POST',
        headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ service: name, payload: {} }),
      });
      const text = await res.text();
      expect(res.status).toBe(200);
      expect(text.startsWith(`{"result":${answer},"cost":`)).toBe(true);
      expect(JSON.parse(text)).toMatchObject({ result: { text: 'café' }, paidWith: 'credit', mode: 'platform-signed' });
      expect(await credits(u)).toBe(45_000_000);
      // In process (what /mcp runs over), the same call answers a domain object, and the same bytes for HTTP.
      const principal = (await h.gw.core.authenticateBearer(u.key))!;
      const inProcess = await h.gw.core.calls.call(principal, { service: name, payload: {} });
      expect(inProcess.ok).toBe(true);
      expect(inProcess.value).toMatchObject({
        result: { text: 'café' },
        paidWith: 'credit',
        cost: { base_units: 5_000_000 },
        newBalance: { base_units: 40_000_000 },
      });
      expect(inProcess.json.startsWith(`{"result":${answer},"cost":`)).toBe(true);
    });

    it('refunds when the service is down', async () => {
      const srv = await rawServer(() => undefined);
      const url = srv.url;
      await new Promise((r) => srv.server.close(r));
      const name = `down${Math.random().toString(36).slice(2, 8)}`;
      await h.registerRaw(name, url, '0.5');
      const u = await h.user();
      const r = await u.api('/v1/call', { body: { service: name, payload: {} } });
      expect(r.status).toBe(500);
      expect(r.body.error).toBe('service unreachable: connection refused (ECONNREFUSED); the 0.5 USD charge was refunded to your credits');
      expect(await credits(u)).toBe(50_000_000);
    });

    it('replays the first response for a retried Idempotency-Key and charges once; another body under the key is refused', async () => {
      const u = await h.user();
      const first = await u.api('/v1/call', { body: { service: 'echo', payload: { n: 1 } }, headers: { 'idempotency-key': 'k-1' } });
      const again = await u.api('/v1/call', { body: { service: 'echo', payload: { n: 1 } }, headers: { 'idempotency-key': 'k-1' } });
      expect(first.status).toBe(200);
      expect(again.body).toEqual(first.body);
      expect(await credits(u)).toBe(49_900_000);
      const other = await u.api('/v1/call', { body: { service: 'echo', payload: { n: 2 } }, headers: { 'idempotency-key': 'k-1' } });
      expect(other.status).toBe(409);
      expect(other.body.error).toBe('idempotency key reused with a different request');
      expect(await credits(u)).toBe(49_900_000);
    });

    it('pays a dynamic price quoted by the service, never less than the registry floor', async () => {
      await h.publish('wordcount', { price: '0.01', priceFn: (p) => ((p as { words?: number }).words ?? 0) * 0.01 });
      const u = await h.user();
      const cheap = await u.api('/v1/call', { body: { service: 'wordcount', payload: { words: 0 } } });
      expect(cheap.body.cost.lamports).toBe(100_000);
      const dear = await u.api('/v1/call', { body: { service: 'wordcount', payload: { words: 7 } } });
      expect(dear.status).toBe(200);
      expect(dear.body.cost.lamports).toBe(700_000);
      expect(await credits(u)).toBe(50_000_000 - 100_000 - 700_000);
      const capped = await u.api('/v1/call', { body: { service: 'wordcount', payload: { words: 7 } }, headers: { 'farebox-max-cost': '0.05' } });
      expect(capped.status).toBe(500);
      expect(capped.body.error).toMatch(/above the limit of 0.05 USDC/);
      expect(await credits(u)).toBe(50_000_000 - 100_000 - 700_000);
    });

    it('takes limit on every list endpoint, refusing anything but an integer within its bounds with the bound in the message', async () => {
      await alice.api('/v1/api-keys', { body: { name: 'second' } });
      await h.registerRaw('echo-limit', 'http://127.0.0.1:9/', '0.01');
      const lists: Array<[string, number]> = [
        ['/v1/agents', 100],
        ['/v1/agents?q=echo&', 100],
        ['/v1/agents/mine', 500],
        ['/v1/api-keys', 500],
        ['/v1/oauth/connections', 500],
        ['/v1/transactions', 500],
        ['/v1/publisher/settlements', 200],
      ];
      for (const [path, max] of lists) {
        const at = (q: string) => alice.api(`${path}${path.endsWith('&') ? '' : '?'}${q}`);
        for (const bad of ['limit=abc', 'limit=0', `limit=${max + 1}`, 'limit=1.5', 'limit=-1', 'limit=1&limit=2']) {
          expect(await at(bad), `${path} ${bad}`).toMatchObject({ status: 400, body: { error: `invalid limit (must be 1 <= n <= ${max})` } });
        }
      }
      for (const path of ['/v1/agents', '/v1/agents?q=echo&', '/v1/api-keys']) {
        const all = await alice.api(path.replace(/[?&]$/, ''));
        expect(all.body.length, path).toBeGreaterThan(1);
        const one = await alice.api(`${path}${path.endsWith('&') ? '' : '?'}limit=1`);
        expect(one.body, path).toEqual(all.body.slice(0, 1));
      }
    });

    it('lists transactions newest first and enforces the limit range', async () => {
      expect(await alice.api('/v1/transactions?limit=501')).toMatchObject({ status: 400, body: { error: 'invalid limit (must be 1 <= n <= 500)' } });
      expect((await alice.api('/v1/transactions?limit=0')).status).toBe(400);
      expect((await alice.api('/v1/transactions?limit=500')).status).toBe(200);
      const one = await alice.api('/v1/transactions?limit=1');
      expect(one.body).toHaveLength(1);
    });
  });

  describe('catalog and publishing', () => {
    it('lists registry services with the spec fields', async () => {
      const r = await alice.api('/v1/agents');
      const echo = r.body.find((s: { service: string }) => s.service === 'echo');
      expect(echo).toMatchObject({ service: 'echo', pricePerCall: 0.01, acceptedToken: 'USDC', source: 'registry', totalCalls: expect.any(Number) });
      expect(echo.ownerWallet).toMatch(/^G/);
      expect(typeof echo.createdAt).toBe('number');
    });

    it("shows a service's pricing note from its own manifest, and refuses a manifest that does not match the registry", async () => {
      await h.publish('noted', { price: '0.01', priceFn: () => '0.02', pricingNote: '0.01 USDC per 1,000 characters, 0.02 at least for long texts' });
      const r = await alice.api('/v1/agents/noted/manifest');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ service: 'noted', pricing_note: '0.01 USDC per 1,000 characters, 0.02 at least for long texts', dynamic_pricing: true });
      expect(r.body.manifest_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/manifest$/);
      expect(await alice.api('/v1/agents/nope/manifest')).toMatchObject({ status: 404, body: { error: 'service not found' } });
      // A registry entry whose endpoint serves another service's manifest.
      const other = await h.publish('noted-real', { price: '0.01', pricingNote: 'not yours' });
      await h.registerRaw('noted-fake', other.endpoint, '0.01');
      expect(await alice.api('/v1/agents/noted-fake/manifest')).toMatchObject({
        status: 500,
        body: { error: 'service manifest unavailable: it does not match the registry record' },
      });
      // Nothing listening.
      await h.registerRaw('noted-gone', 'http://127.0.0.1:9/', '0.01');
      const gone = await alice.api('/v1/agents/noted-gone/manifest');
      expect(gone.status).toBe(500);
      expect(gone.body.error).toMatch(/^service manifest unavailable: /);
      expect((await fetch(`${h.url}/v1/agents/noted/manifest`)).status).toBe(401);
    });

    it('finds a service by keyword search as soon as its registration through the API returns, and not after its removal', async () => {
      const pub = await h.user();
      expect((await pub.api('/v1/publisher/activate', { body: { name: 'Geo Co' } })).status).toBe(200);
      const svc = await h.serve('geocoder', { price: '0.02', ownerWallet: (await pub.api('/v1/me')).body.custodial_wallet });
      const created = await pub.api('/v1/agents', {
        body: { service: 'geocoder', pricePerCallLamports: 200_000, endpoint: svc.endpoint, description: 'turns street addresses into coordinates' },
      });
      expect(
        created.status,
        JSON.stringify(created.body) +
          h
            .logs()
            .filter((l) => l.includes('"level":"error"') || l.includes('"level":"warn"'))
            .join('\n'),
      ).toBe(201);
      // No waiting: the answer returns once this gateway has indexed the confirmed registration.
      expect((await alice.api('/v1/agents?q=geocoder')).body[0]?.service).toBe('geocoder');
      expect((await alice.api('/v1/agents?q=street coordinates')).body[0]?.service).toBe('geocoder');
      expect((await alice.api('/v1/agents?q=zzqqxxnonsense')).body).toEqual([]);
      const updated = await pub.api('/v1/agents/geocoder', { method: 'PUT', body: { description: 'finds places on a map' } });
      expect(updated.status).toBe(200);
      expect((await alice.api('/v1/agents?q=map places')).body[0]?.service).toBe('geocoder');
      expect((await pub.api('/v1/agents/geocoder', { method: 'DELETE' })).status).toBe(200);
      expect((await alice.api('/v1/agents?q=geocoder')).body.map((x: { service: string }) => x.service)).not.toContain('geocoder');
    });

    it('lets a publisher register, update and remove a service signed by its wallet, and refuses SSRF endpoints', async () => {
      const pub = await h.user();
      expect(
        (await pub.api('/v1/agents', { body: { service: 'mine1', pricePerCallLamports: 1000, endpoint: 'https://example.com/x', description: 'd' } })).status,
      ).toBe(403);
      expect((await pub.api('/v1/publisher/activate', { body: { name: 'Pub Co' } })).body).toMatchObject({ is_publisher: true, publisher_name: 'Pub Co' });
      for (const endpoint of ['http://169.254.169.254/latest/meta-data', 'https://10.0.0.1/', 'http://[::ffff:192.168.0.1]/', 'file:///etc/passwd']) {
        const bad = await pub.api('/v1/agents', { body: { service: 'mine1', pricePerCallLamports: 1000, endpoint, description: 'd' } });
        expect(bad.status, endpoint).toBe(400);
      }
      const svc = await h.publish('backend1', { price: '0.01' });
      const created = await pub.api('/v1/agents', {
        body: { service: 'mine1', pricePerCallLamports: 20_000, endpoint: svc.endpoint, description: 'my service' },
      });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ service: 'mine1', pricePerCall: 0.002, ownerWallet: (await pub.api('/v1/me')).body.custodial_wallet });
      expect((await pub.api('/v1/agents/mine')).body.map((s: { service: string }) => s.service)).toEqual(['mine1']);
      const dup = await pub.api('/v1/agents', { body: { service: 'echo', pricePerCallLamports: 20, endpoint: svc.endpoint, description: '' } });
      expect(dup.status).toBe(409);
      const upd = await pub.api('/v1/agents/mine1', { method: 'PUT', body: { description: 'better' } });
      expect(upd.body.description).toBe('better');
      expect((await alice.api('/v1/agents/mine1', { method: 'PUT', body: { description: 'hijack' } })).status).toBe(403);
      // Another publisher's service (an account's, or one published with its own key): 403 saying so, without naming the owner.
      const other = await h.user();
      await other.api('/v1/publisher/activate', { body: { name: 'Other Co' } });
      for (const [who, name] of [
        [other, 'mine1'],
        [pub, 'echo'],
      ] as const) {
        const put = await who.api(`/v1/agents/${name}`, { method: 'PUT', body: { description: 'hijack' } });
        const del = await who.api(`/v1/agents/${name}`, { method: 'DELETE' });
        for (const r of [put, del]) expect(r).toMatchObject({ status: 403, body: { error: `service ${name} belongs to another publisher` } });
      }
      expect(await pub.api('/v1/agents/nobody-has-this', { method: 'DELETE' })).toMatchObject({ status: 404, body: { error: 'service not found' } });
      expect((await other.api('/v1/agents/mine')).body).toEqual([]);
      expect((await pub.api('/v1/agents/mine?limit=1')).body.map((s: { service: string }) => s.service)).toEqual(['mine1']);
      expect((await pub.api('/v1/agents/mine1', { method: 'DELETE' })).body).toMatchObject({ service: 'mine1', removed: true });
      expect((await pub.api('/v1/agents/mine')).body).toEqual([]);
      expect((await alice.api('/v1/agents')).body.find((s: { service: string }) => s.service === 'mine1')).toBeUndefined();
    });

    it('shows a publisher its earnings net of the fee in the overview and analytics', async () => {
      const pub = await h.user();
      await pub.api('/v1/publisher/activate', { body: { name: 'Analytics Co' } });
      const wallet = (await pub.api('/v1/me')).body.custodial_wallet;
      const backend = await h.serve('paid2', { price: '0.1', ownerWallet: wallet });
      expect(
        (await pub.api('/v1/agents', { body: { service: 'paid2', pricePerCallLamports: 1_000_000, endpoint: backend.endpoint, description: 'pays' } })).status,
      ).toBe(201);
      const caller = await h.user();
      for (let i = 0; i < 3; i++) expect((await caller.api('/v1/call', { body: { service: 'paid2', payload: {} } })).status).toBe(200);
      const o = await pub.api('/v1/publisher/overview');
      expect(o.body).toMatchObject({
        calls: 3,
        earned_sol: 2_850_000,
        earned_base_units: 2_850_000,
        gross_base_units: 3_000_000,
        fee_base_units: 150_000,
        pending_base_units: 2_850_000,
        settled_base_units: 0,
        fee: { pct: 5 },
      });
      const a = await pub.api('/v1/publisher/analytics?days=7');
      expect(a.body).toHaveLength(7);
      expect(a.body.at(-1)).toMatchObject({ calls: 3, earned_base_units: 2_850_000, earned_lamports: 2_850_000, earned_sol: 2_850_000, earned_usd: 0.285 });
      expect((await pub.api('/v1/publisher/analytics?days=91')).status).toBe(400);
      expect((await pub.api('/v1/publisher/analytics?days=0')).status).toBe(400);
      expect((await pub.api('/v1/publisher/settlements?limit=201')).status).toBe(400);
      // The settler (every 10 s) gathers earnings not in a cycle yet into one; it runs now, so that
      // what the list shows is not left to when its timer fired (it may have taken the first calls already).
      await h.gw.core.settlement.engine!.tick();
      const cycles = (await pub.api('/v1/publisher/settlements')).body as Array<{
        calls: number;
        gross: { base_units: number };
        fee: { base_units: number };
        net: { base_units: number };
        paid: { base_units: number };
      }>;
      expect(cycles.length).toBeGreaterThan(0);
      const total = (field: 'gross' | 'fee' | 'net' | 'paid') => cycles.reduce((sum, c) => sum + c[field].base_units, 0);
      // Every call's earning in exactly one cycle, the fee on each, nothing paid before the settlement interval.
      expect({ calls: cycles.reduce((sum, c) => sum + c.calls, 0), gross: total('gross'), fee: total('fee'), net: total('net'), paid: total('paid') }).toEqual({
        calls: 3,
        gross: 3_000_000,
        fee: 150_000,
        net: 2_850_000,
        paid: 0,
      });
    });
  });

  describe('platform', () => {
    it('serves /health and the platform key without a credential', async () => {
      const health = await fetch(`${h.url}/health`);
      expect(await health.json()).toMatchObject({ ok: true, service: 'farebox-gateway' });
      const key = await (await fetch(`${h.url}/v1/platform/key`)).json();
      expect(key).toMatchObject({ publicKey: h.gw.core.platformPublicKey, network: 'local', passphrase: 'Standalone Network ; February 2017' });
      expect(key.publicKey).not.toBe(key.treasury);
    });

    it('reports marketplace stats and platform revenue', async () => {
      const r = await alice.api('/v1/platform/stats');
      expect(r.status).toBe(200);
      expect(r.body.calls).toBeGreaterThan(0);
      expect(r.body.revenue_base_units).toBeGreaterThan(0);
    });
  });

  describe('logs of the whole suite', () => {
    it('are JSON lines, every request with its id, and none holds a secret the suite created', () => {
      const lines = h.logs();
      expect(lines.length).toBeGreaterThan(100);
      const entries = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const requests = entries.filter((e) => e.event === 'request');
      expect(requests.length).toBeGreaterThan(100);
      for (const r of requests) expect(r.reqId).toEqual(expect.stringMatching(/\S/));
      expect(entries.filter((e) => e.event === 'call').length).toBeGreaterThan(50);
      const secrets = h.secrets();
      expect(secrets.length).toBeGreaterThan(10);
      const text = lines.join('\n');
      for (const secret of secrets) expect(text.includes(secret), `a log line holds ${secret.slice(0, 12)}…`).toBe(false);
    });
  });

  describe('the contract (@farebox/contract, served as GET /openapi.json)', () => {
    it('answers every request of this suite as its operation declares: status and body valid against the served OpenAPI document, no undocumented field', async () => {
      const res = await fetch(`${h.url}/openapi.json`);
      expect(res.status).toBe(200);
      const doc = (await res.json()) as { openapi: string; servers: Array<{ url: string }> };
      expect(doc.openapi).toBe('3.1.0');
      expect(doc.servers).toEqual([{ url: h.url }]);
      const responses = recorder.responses.filter((r) => !r.path.startsWith('/openapi.json'));
      expect(responses.length).toBeGreaterThan(200);
      const report = await checkResponses(doc, responses);
      expect(report.violations).toEqual([]);
      // Only the embedded devnet is outside the table here.
      expect(report.unmatched.filter((u) => !u.split(' ')[1]!.startsWith('/devnet/'))).toEqual([]);
      // What the suite exercised (each operation, with its statuses), all of it checked.
      const ops = new Set([...report.checked].map((c) => c.split(' ')[0]));
      for (const id of [
        'signup',
        'login',
        'logout',
        'me',
        'balance',
        'topup',
        'transactions',
        'listAgents',
        'agentManifest',
        'call',
        'listApiKeys',
        'createApiKey',
        'revokeApiKey',
        'revokeOAuthConnection',
        'activatePublisher',
        'publisherOverview',
        'publisherSettlements',
        'publisherAnalytics',
        'myAgents',
        'registerAgent',
        'updateAgent',
        'removeAgent',
        'platformStats',
        'platformKey',
        'health',
      ]) {
        expect(ops, id).toContain(id);
      }
    });
  });
}
