import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRegistryClient } from '@farebox/stellar';
import { startHttpStack, type HttpAccount, type HttpStack } from './kit.js';

// Issue 33, items 4 and 5: names that cannot deceive, and no input that reaches a 500 or a half-done write.

const INVALID_NAME = 'invalid service name: use 1 to 32 lower-case letters, digits and single hyphens, starting and ending with a letter or digit';
const TOKEN = 'metrics-token-names-0123456789';

/** Names that look like `echo` (or are not names at all), each refused by the policy. */
const DECEPTIVE = ['\u0435cho', 'echo\u200b', 'ECHO', 'echo ', '\u202eohce', 'Qa Y!', 'my_echo', 'echo.v2', 'echo--2', '-echo'];

describe('service names and the text of requests', () => {
  let h: HttpStack;
  let u: HttpAccount;
  let pub: HttpAccount;
  let endpoint: string;
  const registry = () => createRegistryClient(h.core.network);

  async function state() {
    const [balance, keys, mine, tx, me] = await Promise.all([
      u.api('/v1/balance'),
      u.api('/v1/api-keys'),
      pub.api('/v1/agents/mine'),
      u.api('/v1/transactions?limit=500'),
      pub.api('/v1/me'),
    ]);
    return JSON.stringify([balance.body.balance_base_units, keys.body.length, mine.body, tx.body.length, me.body.publisher_name]);
  }

  beforeAll(async () => {
    h = await startHttpStack({ logLevel: 'info', gateway: { metricsToken: TOKEN } });
    u = await h.account();
    pub = await h.account();
    expect((await pub.api('/v1/publisher/activate', { body: { name: 'Names Co' } })).status).toBe(200);
    ({ endpoint } = await h.publish('echo', '0.01'));
  }, 120_000);
  afterAll(() => h?.close());

  it('refuses a registration whose name breaks the policy, with its message and nothing on chain', async () => {
    for (const service of DECEPTIVE) {
      const r = await pub.api('/v1/agents', { body: { service, pricePerCallLamports: 100_000, endpoint, description: 'looks like echo' } });
      expect(r, JSON.stringify(service)).toMatchObject({ status: 400, body: { error: INVALID_NAME } });
      expect(await registry().getAgent(service), JSON.stringify(service)).toBeNull();
    }
    expect(await pub.api('/v1/agents', { body: { service: '', pricePerCallLamports: 1, endpoint, description: '' } })).toMatchObject({
      status: 400,
      body: { error: 'service required' },
    });
    expect(await pub.api('/v1/agents', { body: { service: 'x'.repeat(33), pricePerCallLamports: 1, endpoint, description: '' } })).toMatchObject({
      status: 400,
      body: { error: 'service name too long (max 32)' },
    });
    expect((await pub.api('/v1/agents/mine')).body).toEqual([]);
  });

  it('never lists, finds, describes or calls a name that breaks the policy when it reaches the registry contract directly, and the mirror goes on', async () => {
    const before = h.core.mirror.status().skipped;
    const onChain = [...DECEPTIVE, 'a\u0000b', 'tab\there'];
    for (const name of onChain) await h.registerRaw(name, endpoint, '0.01');
    // A good name written after the bad ones: the mirror did not stop at them.
    await h.registerRaw('after-bad', endpoint, '0.01');
    expect(h.core.mirror.status()).toMatchObject({ failures: 0, skipped: before + onChain.length });

    const listed = ((await u.api('/v1/agents')).body as Array<{ service: string }>).map((a) => a.service).sort();
    expect(listed).toEqual(['after-bad', 'echo']);
    const found = ((await u.api('/v1/agents?q=echo')).body as Array<{ service: string }>).map((a) => a.service);
    expect(found.filter((s) => s !== 'echo' && s !== 'after-bad')).toEqual([]);
    expect(found).toContain('echo');

    const balance = (await u.api('/v1/balance')).body.balance_base_units;
    for (const name of DECEPTIVE) {
      expect(await u.api('/v1/call', { body: { service: name, payload: {} } }), JSON.stringify(name)).toMatchObject({
        status: 400,
        body: { error: INVALID_NAME },
      });
      expect((await u.api(`/v1/agents/${encodeURIComponent(name)}/manifest`)).status, JSON.stringify(name)).toBe(404);
    }
    expect((await u.api('/v1/balance')).body.balance_base_units).toBe(balance);
    expect((await u.api('/v1/call', { body: { service: 'echo', payload: { hi: 1 } } })).status).toBe(200);

    // One log line per skipped name (escaped, so it shows what it is) and a metric.
    const skippedLines = h.logs().filter((l) => l.includes('skipped: invalid service name'));
    expect(skippedLines.length).toBe(onChain.length);
    expect(skippedLines.some((l) => l.includes('registry entry \\"\\\\u0435cho\\"'))).toBe(true);
    const metrics = await (await h.fetch(`/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    expect(metrics).toMatch(new RegExp(`^farebox_catalog_skipped_services ${before + onChain.length}$`, 'm'));
    // Read again (a restart of the sync): the same names are not logged again.
    await h.core.mirror.confirm('ECHO');
    expect(h.logs().filter((l) => l.includes('skipped: invalid service name')).length).toBe(onChain.length);
  });

  it('refuses NUL, C0/C1 controls and unpaired surrogates in a registration with 400 naming the field, before anything is written on chain', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ service: 'n\u0000ul' }, 'invalid service: control character U+0000 not allowed'],
      [{ service: '\ud800y' }, 'invalid service: unpaired surrogate U+D800 not allowed'],
      [{ service: 'ok-name', description: 'bell\u0007' }, 'invalid description: control character U+0007 not allowed'],
      [{ service: 'ok-name', description: 'c1\u0085' }, 'invalid description: control character U+0085 not allowed'],
      [{ service: 'ok-name', endpoint: `${endpoint}\udc00` }, 'invalid endpoint: unpaired surrogate U+DC00 not allowed'],
    ];
    for (const [fields, message] of cases) {
      const body = { service: 'x', pricePerCallLamports: 100_000, endpoint, description: 'd', ...fields };
      const before = await state();
      // JSON.stringify writes a lone surrogate as the escape \udXXX: what a client sends.
      expect(await pub.api('/v1/agents', { body: JSON.stringify(body) }), message).toMatchObject({ status: 400, body: { error: message } });
      expect(await registry().getAgent(body.service as string)).toBeNull();
      expect(await state()).toBe(before);
    }
    // A description is free text: tab and line breaks are kept.
    const ok = await pub.api('/v1/agents', {
      body: { service: 'two-lines', pricePerCallLamports: 100_000, endpoint, description: 'first line\nsecond\tline' },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    expect((await u.api('/v1/agents')).body.find((a: { service: string }) => a.service === 'two-lines')).toMatchObject({
      description: 'first line\nsecond\tline',
    });
  });

  it('lets the owner remove, not change, a service it registered before the name policy; it is never listed or called', async () => {
    // What a gateway upgraded to the policy holds: a name registered through it (signed by the account's wallet) before.
    const wallet = (await pub.api('/v1/wallet')).body.pubkey as string;
    const signer = { publicKey: wallet, signTransaction: (xdr: string, passphrase: string) => h.core.wallets.sign(wallet, xdr, passphrase) };
    const { txHash } = await registry().register(signer, { service: 'Legacy_Svc', pricePerCall: 100_000n, endpoint, description: 'from before' });
    await h.core.db.query('INSERT INTO gw_services (service, user_id, owner_wallet, tx_hash) VALUES ($1, $2, $3, $4)', ['Legacy_Svc', pub.id, wallet, txHash]);
    await h.core.mirror.syncOnce();
    expect(((await u.api('/v1/agents')).body as Array<{ service: string }>).map((a) => a.service)).not.toContain('Legacy_Svc');
    expect(((await pub.api('/v1/agents/mine')).body as Array<{ service: string }>).map((a) => a.service)).toContain('Legacy_Svc');
    expect(await pub.api('/v1/agents/Legacy_Svc', { method: 'PUT', body: { description: 'changed' } })).toMatchObject({
      status: 400,
      body: { error: `${INVALID_NAME} (this service can only be removed)` },
    });
    expect(await registry().getAgent('Legacy_Svc')).toMatchObject({ description: 'from before' });
    expect(await pub.api('/v1/agents/Legacy_Svc', { method: 'DELETE' })).toMatchObject({ status: 200, body: { service: 'Legacy_Svc', removed: true } });
    expect(await registry().getAgent('Legacy_Svc')).toBeNull();
    expect(((await pub.api('/v1/agents/mine')).body as Array<{ service: string }>).map((a) => a.service)).not.toContain('Legacy_Svc');
  });

  it('refuses them in a call, with a bearer key and with a session cookie, before anything is held', async () => {
    const before = await state();
    const cases: Array<[string, string]> = [
      ['{"service":"a\\u0000b","payload":{}}', 'invalid service: control character U+0000 not allowed'],
      ['{"service":"echo","payload":{"text":"\\ud800x"}}', 'invalid payload.text: unpaired surrogate U+D800 not allowed'],
      ['{"service":"echo","payload":{"list":[1,"\\u001b[31m"]}}', 'invalid payload.list[1]: control character U+001B not allowed'],
      ['{"service":"echo","payload":{"k\\u0000":1}}', 'invalid field name in payload: control character U+0000 not allowed'],
      ['{"service":"echo","payload":{"nul":"\\u0000"}}', 'invalid payload.nul: control character U+0000 not allowed'],
    ];
    for (const [body, message] of cases) {
      expect(await u.api('/v1/call', { body }), body).toMatchObject({ status: 400, body: { error: message } });
      // A cookie session: the same route and reader, the same answer.
      const viaCookie = await h.fetch(`/v1/call`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: u.cookie, 'x-csrf-token': u.csrf, origin: h.origin },
        body,
      });
      expect([viaCookie.status, await viaCookie.json()], body).toEqual([400, { error: message, code: 'BAD_REQUEST' }]);
    }
    expect(await state()).toBe(before);
    // Tab, line feed, carriage return and any well-formed text (emoji) in a payload are served as sent.
    const served = await u.api('/v1/call', { body: { service: 'echo', payload: { text: 'a\tb\r\nc 😀' } } });
    expect(served.status, JSON.stringify(served.body)).toBe(200);
    expect(JSON.stringify(served.body)).toContain('a\\tb\\r\\nc 😀');
  });

  it('refuses bytes that are no UTF-8 (an encoded surrogate, a cut sequence) instead of reading them as U+FFFD', async () => {
    const before = await state();
    const bodies = [
      Buffer.concat([Buffer.from('{"service":"echo","payload":{"t":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('x"}}')]),
      Buffer.concat([Buffer.from('{"service":"echo","payload":{"t":"'), Buffer.from([0xe2, 0x82]), Buffer.from('"}}')]),
    ];
    for (const body of bodies) {
      for (const [path, headers] of [
        ['/v1/call', { authorization: `Bearer ${u.key}` }],
        ['/v1/call', { cookie: u.cookie, 'x-csrf-token': u.csrf, origin: h.origin }],
        ['/v1/api-keys', { authorization: `Bearer ${u.key}` }],
      ] as const) {
        const r = await h.fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: new Uint8Array(body) });
        expect([r.status, await r.json()], path).toEqual([400, { error: 'invalid UTF-8 in the JSON body', code: 'BAD_REQUEST' }]);
      }
    }
    expect(await state()).toBe(before);
  });

  it('counts key and publisher names in characters and refuses control characters in them', async () => {
    const emoji = '😀'.repeat(64);
    expect(await u.api('/v1/api-keys', { body: { name: emoji } })).toMatchObject({ status: 201, body: { name: emoji } });
    expect(await u.api('/v1/api-keys', { body: { name: `${emoji}😀` } })).toMatchObject({ status: 400, body: { error: 'name too long (max 64)' } });
    expect(await pub.api('/v1/publisher/activate', { body: { name: emoji } })).toMatchObject({ status: 200, body: { publisher_name: emoji } });
    const before = await state();
    expect(await u.api('/v1/api-keys', { body: { name: 'ci\tserver' } })).toMatchObject({
      status: 400,
      body: { error: 'invalid name: control character U+0009 not allowed' },
    });
    expect(await u.api('/v1/api-keys', { body: JSON.stringify({ name: 'ci\ud800' }) })).toMatchObject({
      status: 400,
      body: { error: 'invalid name: unpaired surrogate U+D800 not allowed' },
    });
    expect(await pub.api('/v1/publisher/activate', { body: { name: 'Acme\u0000' } })).toMatchObject({
      status: 400,
      body: { error: 'invalid name: control character U+0000 not allowed' },
    });
    expect(await state()).toBe(before);
  });

  it('refuses them in every other body (sign-in JSON and forms, OAuth registration, disputes, MCP) and in path parameters, without a 500', async () => {
    const nul = 'invalid email: control character U+0000 not allowed';
    const signup = await h.fetch(`/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'n\u0000@example.com', password: 'correct horse battery' }),
    });
    expect([signup.status, await signup.json()]).toEqual([400, { error: nul, code: 'BAD_REQUEST' }]);
    const form = await h.fetch(`/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=n%00%40example.com&password=x',
      redirect: 'manual',
    });
    expect([form.status, await form.json()]).toEqual([400, { error: nul, code: 'BAD_REQUEST' }]);
    const reg = await h.fetch(`/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'x\u0000', redirect_uris: ['http://127.0.0.1:9/cb'] }),
    });
    expect([reg.status, await reg.json()]).toEqual([
      400,
      { error: 'invalid_request', error_description: 'invalid client_name: control character U+0000 not allowed' },
    ]);
    expect(await u.api('/v1/disputes', { body: { escrowId: '\ud800', proof: 'x' } })).toMatchObject({
      status: 400,
      body: { error: 'invalid escrowId: unpaired surrogate U+D800 not allowed' },
    });

    const accessToken = await h.accessToken(u);
    const mcp = await h.fetch('/mcp', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'call_agent', arguments: { service: 'a\u0000b', payload: {} } } }),
    });
    expect(mcp.status).toBe(400);
    expect(((await mcp.json()) as { error: { message: string } }).error.message).toBe('invalid params.arguments.service: control character U+0000 not allowed');

    // OAuth's query and form parameters: a NUL client id is an unknown client, not a 500.
    expect((await h.fetch(`/authorize?client_id=%00&response_type=code`, { headers: { cookie: u.cookie } })).status).toBe(400);
    const token = await h.fetch(`/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=x&client_id=a%00b&code_verifier=x&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcb',
    });
    expect(token.status).toBeGreaterThanOrEqual(400);
    expect(token.status).toBeLessThan(500);

    for (const [method, path] of [
      ['DELETE', '/v1/agents/a%00b'],
      ['PUT', '/v1/agents/a%00b'],
      ['GET', '/v1/agents/a%00b/manifest'],
      ['DELETE', '/v1/api-keys/%00'],
      ['GET', '/v1/agents?q=%00'],
    ] as const) {
      const r = await pub.api(path, { method, ...(method === 'PUT' ? { body: { description: 'x' } } : {}) });
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.error, `${method} ${path}`).toMatch(/^invalid (service|id|q): control character U\+0000 not allowed$/);
    }
  });
});
