import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientError, GatewayApiError, createGatewayClient } from '@farebox/client';
import { startHarness, type Harness, type TestUser } from './harness.js';
import { startHttpProxy, type HttpProxy, type ProxyHook } from './http-proxy-kit.js';

// @farebox/client's paid calls against a real gateway, through a loopback
// proxy that loses answers: every call carries an Idempotency-Key, a lost
// connection is asked again once under the same key, and the caller gets the
// call's one outcome, charged once.

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const PRICE = 100_000; // 0.01 USD in base units

let h: Harness;
let u: TestUser;
let proxy: HttpProxy;
/** What the proxy does with the next calls (one verdict each, then pass). */
const verdicts: Array<'drop' | 'drop-answer'> = [];
/** Every POST /v1/call the proxy saw: its Idempotency-Key. */
const seen: Array<string | undefined> = [];

const hook: ProxyHook = (req) => {
  if (req.method !== 'POST' || req.url !== '/v1/call') return;
  seen.push(req.headers['idempotency-key'] as string | undefined);
  return verdicts.shift();
};

const client = (options: { callRetryWaitMs?: number } = {}) => createGatewayClient({ baseUrl: proxy.url, apiKey: u.key, ...options });

async function holdsOf(accountId: string) {
  const { rows } = await h.gw.core.ledger.db.query<{ call_id: string; state: string; idempotency_key: string | null }>(
    'SELECT call_id, state, idempotency_key FROM holds WHERE account_id = $1 ORDER BY created_at',
    [accountId],
  );
  return rows;
}

const balance = async () => (await u.api('/v1/balance')).body.balance_base_units as number;

beforeAll(async () => {
  h = await startHarness('pglite');
  await h.publish('steady', { price: '0.01' });
  await h.publish('broken', {
    price: '0.01',
    handler: () => {
      throw new Error('broken on purpose');
    },
  });
  await h.publish('slow', {
    price: '0.01',
    handler: async (payload) => {
      await new Promise((r) => setTimeout(r, 1500));
      return { echo: payload };
    },
  });
  proxy = await startHttpProxy(h.url, hook);
}, 120_000);

afterAll(async () => {
  await proxy?.close();
  await h?.close();
});

describe('@farebox/client paid calls are retry-safe', () => {
  it('sends a fresh random Idempotency-Key with every call, or the caller’s own', async () => {
    u = await h.user();
    seen.length = 0;
    const gw = client();
    const a = await gw.call('steady', { n: 1 });
    const b = await gw.call('steady', { n: 1 });
    await gw.call('steady', { n: 2 }, { idempotencyKey: 'job-42' });
    expect(seen).toHaveLength(3);
    expect(seen[0]).toMatch(UUID);
    expect(seen[1]).toMatch(UUID);
    expect(seen[0]).not.toBe(seen[1]);
    expect(seen[2]).toBe('job-42');
    // Two calls with the same payload are two calls: each charged.
    expect(a.callId).not.toBe(b.callId);
    expect((await holdsOf(u.id)).map((x) => [x.state, x.idempotency_key])).toEqual([
      ['posted', seen[0]],
      ['posted', seen[1]],
      ['posted', 'job-42'],
    ]);
    // A key the gateway cannot take is refused before anything is sent.
    const bad = await gw.call('steady', {}, { idempotencyKey: '' }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ClientError);
    expect((bad as ClientError).message).toBe('idempotencyKey must be 1 to 255 characters');
    expect(seen).toHaveLength(3);
  });

  it('asks again under the same key when the answer was lost, and gets the first outcome, charged once', async () => {
    u = await h.user();
    const before = await balance();
    seen.length = 0;
    verdicts.push('drop-answer');
    const r = await client().call('steady', { text: 'once' });
    expect(r.result).toEqual({ echo: { text: 'once' } });
    // Two requests reached the gateway, both under the same key; the second was answered from the first.
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatch(UUID);
    expect(seen[1]).toBe(seen[0]);
    const holds = await holdsOf(u.id);
    expect(holds).toEqual([{ call_id: r.callId, state: 'posted', idempotency_key: seen[0] }]);
    expect(r.newBalance.lamports).toBe(before - PRICE);
    expect(await balance()).toBe(before - PRICE);
  });

  it('a failed call whose answer was lost is answered with the same failure and its callId, refunded, never charged', async () => {
    u = await h.user();
    const before = await balance();
    seen.length = 0;
    verdicts.push('drop-answer');
    const err = await client()
      .call('broken', {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GatewayApiError);
    const e = err as GatewayApiError;
    expect(e.status).toBe(500);
    expect(seen).toEqual([seen[0], seen[0]]);
    expect(e.data.idempotencyKey).toBe(seen[0]);
    const holds = await holdsOf(u.id);
    expect(holds).toHaveLength(1);
    expect(holds[0]).toMatchObject({ state: 'voided', idempotency_key: seen[0] });
    expect(e.data.callId).toBe(holds[0]!.call_id);
    expect((e.body as { callId?: string }).callId).toBe(holds[0]!.call_id);
    expect(await balance()).toBe(before);
  });

  it('retries a lost connection once only: a second loss is the caller’s NETWORK error, with the key that finds out', async () => {
    u = await h.user();
    seen.length = 0;
    verdicts.push('drop-answer', 'drop-answer');
    const err = await client()
      .call('steady', { text: 'twice lost' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientError);
    expect((err as ClientError).code).toBe('NETWORK');
    expect(seen).toHaveLength(2);
    expect((err as ClientError).data.idempotencyKey).toBe(seen[0]);
    // Asking with that key tells the caller it was charged, once.
    const r = await client().call('steady', { text: 'twice lost' }, { idempotencyKey: seen[0]! });
    expect(r.result).toEqual({ echo: { text: 'twice lost' } });
    expect((await holdsOf(u.id)).map((x) => x.state)).toEqual(['posted']);
  });

  it('an answer lost while the call is still running: the retry waits out the attempt in progress (409 Retry-After) and gets its outcome', async () => {
    u = await h.user();
    const before = await balance();
    seen.length = 0;
    // The connection is cut at once; the gateway is still calling the slow service when the retry comes.
    verdicts.push('drop');
    const r = await client({ callRetryWaitMs: 3000 }).call('slow', { text: 'patience' });
    expect(r.result).toEqual({ echo: { text: 'patience' } });
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(new Set(seen).size).toBe(1);
    expect(await holdsOf(u.id)).toEqual([{ call_id: r.callId, state: 'posted', idempotency_key: seen[0] }]);
    expect(await balance()).toBe(before - PRICE);
  });
});

describe('the callId of a paid call is in its error answers', () => {
  it('service not found, insufficient balance, price over Farebox-Max-Cost: callId; input errors before the call exists: none', async () => {
    u = await h.user();
    const gw = client();
    const refusal = async (service: string, opts: { maxCost?: string } = {}) => {
      const e = await gw.call(service, {}, opts).catch((x: unknown) => x);
      expect(e).toBeInstanceOf(GatewayApiError);
      return e as GatewayApiError;
    };
    const missing = await refusal('nobody-here');
    expect(missing.status).toBe(404);
    expect((missing.body as { callId?: string }).callId).toMatch(/^call_/);
    expect(missing.data.callId).toBe((missing.body as { callId: string }).callId);
    const capped = await refusal('steady', { maxCost: '0.001' });
    expect(capped.status).toBe(400);
    expect(capped.body).toEqual({
      error: 'this call to steady costs $0.01, over the most it may cost ($0.001: Farebox-Max-Cost, --max-cost in the CLI); nothing was charged',
      code: 'BAD_REQUEST',
      callId: expect.stringMatching(/^call_/),
    });

    // Spend the sign-up credits down to less than one call.
    const broke = await h.user();
    const credits = (await broke.api('/v1/balance')).body.balance_base_units as number;
    await h.registerRaw('pricey', 'http://127.0.0.1:9/', String((credits + 1) / 10_000_000));
    const poor = (await createGatewayClient({ baseUrl: proxy.url, apiKey: broke.key })
      .call('pricey', {})
      .catch((x: unknown) => x)) as GatewayApiError;
    expect(poor.status).toBe(402);
    expect(poor.body).toEqual({ error: 'insufficient balance', code: 'INSUFFICIENT_BALANCE', callId: expect.stringMatching(/^call_/) });

    const invalid = await u.api('/v1/call', { body: { payload: {} } });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toEqual({ error: 'service required', code: 'BAD_REQUEST' });
  });
});
